import { describe, expect, it } from 'vitest';
import { browserName, clientDetails, deviceType, osName } from './client-details';

const UA = {
  chromeLinux: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36',
  headless: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/147.0.7727.0 Safari/537.36',
  edgeWindows: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/146.0.0.0 Safari/537.36 Edg/146.0.3856.62',
  firefoxMac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:128.0) Gecko/20100101 Firefox/128.0',
  safariMac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.3 Safari/605.1.15',
  safariIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.3 Mobile/15E148 Safari/604.1',
  chromeIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/133.0.6943.84 Mobile/15E148 Safari/604.1',
  androidPhone: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Mobile Safari/537.36',
  androidTablet: 'Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36',
  samsung: 'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36',
  chromebook: 'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36',
} as const;

describe('client details from the user agent', () => {
  it.each([
    [UA.chromeLinux, 0, 'Chrome 147', 'Linux', 'desktop'],
    [UA.headless, 0, 'Chrome 147', 'Linux', 'desktop'],
    [UA.edgeWindows, 0, 'Edge 146', 'Windows', 'desktop'],
    [UA.firefoxMac, 0, 'Firefox 128', 'macOS', 'desktop'],
    [UA.safariMac, 0, 'Safari 18', 'macOS', 'desktop'],
    [UA.safariMac, 5, 'Safari 18', 'iPadOS', 'tablet'],
    [UA.safariIphone, 5, 'Safari 18', 'iOS', 'mobile'],
    [UA.chromeIphone, 5, 'Chrome 133', 'iOS', 'mobile'],
    [UA.androidPhone, 5, 'Chrome 133', 'Android', 'mobile'],
    [UA.androidTablet, 5, 'Chrome 133', 'Android', 'tablet'],
    [UA.samsung, 5, 'Samsung Internet 27', 'Android', 'mobile'],
    [UA.chromebook, 0, 'Chrome 133', 'ChromeOS', 'desktop'],
  ])('%s (%i touch points)', (ua, touch, browser, os, device) => {
    expect(browserName(ua)).toBe(browser);
    expect(osName(ua, touch)).toBe(os);
    expect(deviceType(ua, touch)).toBe(device);
  });

  it('says Unknown for what it cannot read', () => {
    expect(browserName('curl/8.5.0')).toBe('Unknown');
    expect(osName('curl/8.5.0', 0)).toBe('Unknown');
  });

  it('assembles the telemetry client details', () => {
    expect(clientDetails({ userAgent: UA.chromeLinux, maxTouchPoints: 0, embedded: true, domainUrl: 'https://host.example' })).toEqual({
      browser: 'Chrome 147',
      os: 'Linux',
      deviceType: 'desktop',
      embedded: true,
      domainUrl: 'https://host.example',
    });
  });
});

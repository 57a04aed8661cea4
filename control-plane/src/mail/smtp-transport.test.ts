import { describe, expect, it } from 'vitest';
import { smtpConnectionOptions } from './smtp-transport';

describe('smtpConnectionOptions', () => {
  it('requires STARTTLS on smtp:// to any server but this machine, speaks TLS from the start on smtps://', () => {
    expect(smtpConnectionOptions('smtp://user:pw@mail.example.com:587')).toMatchObject({ secure: false, requireTLS: true });
    expect(smtpConnectionOptions('smtp://10.0.0.5:25')).toMatchObject({ secure: false, requireTLS: true });
    expect(smtpConnectionOptions('smtp://127.0.0.1:2525')).toMatchObject({ secure: false, requireTLS: false });
    expect(smtpConnectionOptions('smtp://[::1]:2525')).toMatchObject({ secure: false, requireTLS: false });
    expect(smtpConnectionOptions('smtp://localhost:25')).toMatchObject({ secure: false, requireTLS: false });
    expect(smtpConnectionOptions('smtps://user:pw@mail.example.com:465')).toMatchObject({ secure: true, requireTLS: false });
  });

  it('bounds connecting, the greeting and a silent socket', () => {
    const options = smtpConnectionOptions('smtps://mail.example.com');
    expect([options.connectionTimeout, options.greetingTimeout, options.socketTimeout]).toEqual([30_000, 30_000, 60_000]);
  });
});

import { describe, expect, it } from 'vitest';
import { listenErrorOf, listenOrExplain, ListenError } from './listen-error';

describe('listenErrorOf', () => {
  it('names the port key for a taken or forbidden port, the host key for an address the machine lacks', () => {
    expect(listenErrorOf('http', '0.0.0.0', 80, Object.assign(new Error('listen EACCES'), { code: 'EACCES' }))?.message).toBe(
      'cannot listen on 0.0.0.0:80 (config key "http.port"): permission denied (ports below 1024 need privileges)',
    );
    expect(listenErrorOf('grpc', '::1', 5, new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use ::1:5]'))?.key).toBe('grpc.port');
    expect(listenErrorOf('http', '10.9.9.9', 8080, Object.assign(new Error('x'), { code: 'EADDRNOTAVAIL' }))?.message).toBe(
      'cannot listen on 10.9.9.9:8080 (config key "http.host"): this machine has no such address',
    );
  });

  it('leaves any other failure alone', async () => {
    expect(listenErrorOf('http', '127.0.0.1', 1, new Error('boom'))).toBeUndefined();
    const boom = new Error('boom');
    await expect(listenOrExplain('http', '127.0.0.1', 1, () => Promise.reject(boom))).rejects.toBe(boom);
    await expect(listenOrExplain('http', '127.0.0.1', 1, () => Promise.reject(Object.assign(new Error(''), { code: 'EADDRINUSE' })))).rejects.toBeInstanceOf(ListenError);
  });
});

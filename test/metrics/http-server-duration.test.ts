import { describe, expect, it } from 'vitest';
import { httpServerAttributes } from '../../src/telemetry/http-server-duration.js';

describe('httpServerAttributes', () => {
  it('names method, status, route and scheme as the HTTP semantic conventions do', () => {
    expect(httpServerAttributes('POST', 202, '/v1/messages', 'http')).toEqual({
      'http.request.method': 'POST',
      'http.response.status_code': 202,
      'http.route': '/v1/messages',
      'url.scheme': 'http',
    });
  });

  it('leaves http.route out when no route matched', () => {
    expect(httpServerAttributes('GET', 404, undefined, 'https')).toEqual({ 'http.request.method': 'GET', 'http.response.status_code': 404, 'url.scheme': 'https' });
  });

  it('folds a method the conventions do not know into _OTHER, so a caller cannot add series', () => {
    expect(httpServerAttributes('PROPFIND', 404, undefined, 'http')['http.request.method']).toBe('_OTHER');
    expect(httpServerAttributes('get', 404, undefined, 'http')['http.request.method']).toBe('_OTHER');
  });

  it('sets error.type to the status code of a 5xx answer, and only then', () => {
    expect(httpServerAttributes('POST', 503, '/v1/messages', 'http')['error.type']).toBe('503');
    expect(httpServerAttributes('POST', 429, '/v1/messages', 'http')['error.type']).toBeUndefined();
  });
});

import type { Attributes } from '@opentelemetry/api';

/** The semantic conventions' advice for http.server.request.duration, in seconds. */
export const HTTP_SERVER_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The methods the conventions name; any other is `_OTHER`, so a caller cannot add series. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'QUERY', 'TRACE']);

/**
 * The attributes of one http.server.request.duration measurement (semantic conventions):
 * `route` is the matched route template (`/v1/messages`), undefined when none matched;
 * a 5xx answer sets error.type to its status code. One object, nothing else allocated.
 */
export function httpServerAttributes(method: string, status: number, route: string | undefined, scheme: string): Attributes {
  const attributes: Attributes = {
    'http.request.method': KNOWN_METHODS.has(method) ? method : '_OTHER',
    'http.response.status_code': status,
    'url.scheme': scheme,
  };
  if (route !== undefined) attributes['http.route'] = route;
  if (status >= 500) attributes['error.type'] = String(status);
  return attributes;
}

/**
 * The `Authorization: Basic …` header a URL's `user:password@` asks for, or undefined when it
 * carries none. fetch refuses such a URL and undici's pool takes an origin without it, so the
 * credentials would be dropped unsaid: they are sent as RFC 7617 says, percent-decoded.
 */
export function basicAuthOf(url: URL): string | undefined {
  if (url.username === '' && url.password === '') return undefined;
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
}

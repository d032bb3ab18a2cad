import { createHmac, randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { ThreadlineError } from '../errors.js';
import { bearerToken, secretsMatch } from '../platforms/bearer-token.js';

export const ADMIN_PATH = '/v1/admin';
export const ADMIN_COOKIE = 'threadline_admin';
/** How long a login lasts: a working day. */
export const SESSION_MS = 12 * 3_600_000;

/** How a request was let in; a form's CSRF proof is bound to it. */
export type Admission = { readonly by: 'token' | 'loopback' } | { readonly by: 'cookie'; readonly session: string };

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
/** Set by a proxy in front: the client is then not the loopback peer the socket shows. */
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/**
 * Who may see the operator's page and act on it. With THREADLINE_ADMIN_TOKEN: a bearer header
 * with it, or the cookie its login form sets (`<expiry>.<HMAC of it under the token>`: any
 * instance sharing the token reads it, and it never holds the token). Without: loopback
 * clients only, reached at a loopback host name (a DNS-rebound name is refused), and none that
 * came through a proxy. Every form also carries a CSRF proof bound to the admission, and is
 * refused from another origin.
 */
export class AdminAccess {
  private readonly csrfKey: Buffer;

  constructor(
    private readonly token: string | undefined,
    private readonly now: () => number = Date.now,
  ) {
    // Without a token no other instance needs to read the proof: a key of this process's own.
    this.csrfKey = token === undefined ? randomBytes(32) : createHmac('sha256', token).update('threadline admin csrf').digest();
  }

  get hasToken(): boolean {
    return this.token !== undefined;
  }

  /** How the request is let in, or the refusal to answer (401 without the token, 403 off loopback). */
  admit(request: FastifyRequest): Admission | ThreadlineError {
    if (this.token === undefined) return loopbackRefusal(request) ?? { by: 'loopback' };
    if (secretsMatch(bearerToken(request.headers.authorization), this.token)) return { by: 'token' };
    const session = cookieOf(request.headers.cookie, ADMIN_COOKIE);
    if (session !== undefined && this.sessionValid(session)) return { by: 'cookie', session };
    return new ThreadlineError('TL_UNAUTHORIZED', `Send Authorization: Bearer <THREADLINE_ADMIN_TOKEN>, or log in at ${ADMIN_PATH}`);
  }

  /** Whether `presented` (the login form's field) is the admin token. */
  tokenMatches(presented: string | undefined): boolean {
    return this.token !== undefined && secretsMatch(presented, this.token);
  }

  /** The Set-Cookie value of a new login; Secure when the page was reached over https. */
  loginCookie(secure: boolean): string {
    const expires = this.now() + SESSION_MS;
    return cookie(`${expires}.${this.sessionMac(expires)}`, Math.floor(SESSION_MS / 1_000), secure);
  }

  logoutCookie(secure: boolean): string {
    return cookie('', 0, secure);
  }

  /** The hidden field every form of the page carries. */
  csrfProof(admission: Admission): string {
    return createHmac('sha256', this.csrfKey)
      .update(admission.by === 'cookie' ? `cookie:${admission.session}` : admission.by)
      .digest('base64url');
  }

  /** Why a posted form is refused: from another origin, or without the proof of `admission`. */
  actionRefusal(request: FastifyRequest, admission: Admission, proof: string | undefined): ThreadlineError | undefined {
    return crossOrigin(request) ?? (secretsMatch(proof, this.csrfProof(admission)) ? undefined : new ThreadlineError('TL_FORBIDDEN', 'The form lacks its CSRF proof: reload the page and send it again'));
  }

  private sessionValid(value: string): boolean {
    const match = /^(\d{1,16})\.([\w-]{43})$/.exec(value);
    if (match === null) return false;
    const expires = Number(match[1]);
    const now = this.now();
    return expires > now && expires <= now + SESSION_MS && secretsMatch(match[2], this.sessionMac(expires));
  }

  private sessionMac(expires: number): string {
    return createHmac('sha256', this.token!).update(`threadline admin session:${expires}`).digest('base64url');
  }
}

/** A form is refused when the browser says it came from another site or origin. */
export function crossOrigin(request: FastifyRequest): ThreadlineError | undefined {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return new ThreadlineError('TL_FORBIDDEN', `Refused a form sent from another site (Sec-Fetch-Site: ${site})`);
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  return host !== undefined && host === request.headers.host ? undefined : new ThreadlineError('TL_FORBIDDEN', 'Refused a form sent from another origin');
}

function loopbackRefusal(request: FastifyRequest): ThreadlineError | undefined {
  const refuse = (why: string) => new ThreadlineError('TL_FORBIDDEN', `The operator's page answers ${why} while THREADLINE_ADMIN_TOKEN is unset: set it to open the page to other hosts`);
  if (!isLoopbackAddress(request.socket.remoteAddress)) return refuse('loopback clients only');
  if (PROXY_HEADERS.some((name) => request.headers[name] !== undefined)) return refuse('no client through a proxy');
  if (!isLoopbackHost(request.headers.host)) return refuse('only at a loopback host name (127.0.0.1, [::1], localhost)');
  return undefined;
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  const family = isIP(plain);
  return family !== 0 && LOOPBACK.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}

function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  let name: string;
  try {
    name = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  if (name === 'localhost') return true;
  return isLoopbackAddress(name.replace(/^\[(.*)\]$/, '$1'));
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

function cookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${ADMIN_COOKIE}=${value}; Path=${ADMIN_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ThreadlineError } from '../errors.js';
import type { Gateway } from '../gateway/gateway.js';
import type { OperatorConfig } from '../gateway/operator-config.js';
import type { AnyStore } from '../store/store.js';
import { printable } from '../text/printable.js';
import { ADMIN_PATH, AdminAccess, crossOrigin, type Admission } from './admin-access.js';
import { readOperatorView } from './operator-view.js';
import { CONTENT_SECURITY_POLICY, LOGIN_PATH, LOGOUT_PATH, RETRY_PATH, renderLoginPage, renderOperatorPage } from './render-operator-page.js';

export interface OperatorPageParts {
  readonly gateway: Gateway;
  readonly store: AnyStore;
  readonly config: OperatorConfig;
  readonly logger: Logger;
}

/** A form of the page is a few short fields. */
const FORM_BYTES = 4 * 1024;
/** Longer than any delivery id the gateway makes. */
const MAX_ID_CHARS = 1_024;
const HTML = 'text/html; charset=utf-8';

/**
 * The operator's page (GET /v1/admin) and its forms: log in and out, and send a dead letter
 * again. Not in the OpenAPI document, which describes the machine interface: this one is for
 * people, in plain HTML that works without JavaScript. Who may see it: AdminAccess.
 */
export function registerOperatorPage(app: FastifyInstance, parts: OperatorPageParts): void {
  const access = new AdminAccess(parts.config.adminToken);
  void app.register(async (scope) => {
    // Forms post url-encoded fields; only these routes take them.
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BYTES }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      reply.header('x-content-type-options', 'nosniff');
      reply.header('x-frame-options', 'DENY');
      // same-origin, not no-referrer: with no-referrer a browser posts the page's forms with Origin: null.
      reply.header('referrer-policy', 'same-origin');
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    });

    scope.get(ADMIN_PATH, async (request, reply) => {
      const admission = access.admit(request);
      if (admission instanceof ThreadlineError) {
        if (admission.code === 'TL_UNAUTHORIZED' && wantsHtml(request)) return reply.code(401).type(HTML).send(renderLoginPage(false));
        throw admission;
      }
      const view = await readOperatorView(parts.gateway, parts.store, Date.now());
      const retried = (request.query as Record<string, unknown>)['retried'];
      const page = renderOperatorPage(view, {
        traceUiUrl: parts.config.traceUiUrl,
        csrf: access.csrfProof(admission),
        loggedIn: admission.by === 'cookie',
        retried: retried === 'queued' || retried === 'none' ? retried : undefined,
      });
      return reply.type(HTML).send(page);
    });

    scope.post(LOGIN_PATH, async (request, reply) => {
      if (!access.hasToken) throw new ThreadlineError('TL_FORBIDDEN', "There is no login without THREADLINE_ADMIN_TOKEN: the operator's page answers loopback clients as they are");
      const refused = crossOrigin(request);
      if (refused !== undefined) throw refused;
      if (!access.tokenMatches(field(request, 'token'))) {
        parts.logger.warn({ client: request.socket.remoteAddress }, "operator's page: a login with a wrong admin token");
        return reply.code(401).type(HTML).send(renderLoginPage(true));
      }
      return reply.code(303).header('set-cookie', access.loginCookie(secure(request))).header('location', ADMIN_PATH).send();
    });

    scope.post(LOGOUT_PATH, async (request, reply) => {
      actionAdmission(access, request);
      return reply.code(303).header('set-cookie', access.logoutCookie(secure(request))).header('location', ADMIN_PATH).send();
    });

    scope.post(RETRY_PATH, async (request, reply) => {
      actionAdmission(access, request);
      const id = field(request, 'id');
      if (id === undefined || id === '' || id.length > MAX_ID_CHARS) {
        throw new ThreadlineError('TL_BAD_REQUEST', `Send the id of a dead letter (1 to ${MAX_ID_CHARS} characters) in the form's "id" field`);
      }
      const queued = await parts.store.outbox.retryFailed(id);
      parts.logger.info({ delivery: printable(id), queued }, "operator's page: a dead letter queued to be sent again");
      return reply.code(303).header('location', `${ADMIN_PATH}?retried=${queued > 0 ? 'queued' : 'none'}`).send();
    });
  });
}

/** The admission of a posted form, refused without it, from another origin, or without its CSRF proof. */
function actionAdmission(access: AdminAccess, request: FastifyRequest): Admission {
  const admission = access.admit(request);
  if (admission instanceof ThreadlineError) throw admission;
  const refused = access.actionRefusal(request, admission, field(request, 'csrf'));
  if (refused !== undefined) throw refused;
  return admission;
}

/** A form field (or a JSON body's) when it is a string. */
function field(request: FastifyRequest, name: string): string | undefined {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, name)) return undefined;
  const value: unknown = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

function secure(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}


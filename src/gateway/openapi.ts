import swagger, { type OpenAPIV3_2 } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { WEBHOOK_TAG, webhookDeliverySchema, webhookSecuritySchemes } from '../platforms/webhook/webhook-schema.js';
import { VERSION } from '../version.js';

export const OPENAPI_PATH = '/v1/openapi.json';
/** The tag of /v1/health and /v1/ready: a route is listed in the document only when it has a tag. */
export const HEALTH_TAG = 'health';

// Asserted, not annotated: openapi-types checks nested 3.1 schemas as 3.0 ones, which know no type 'null'.
const document = {
  openapi: '3.1.0',
  info: {
    title: 'threadline',
    version: VERSION,
    description:
      "A chat gateway that carries each conversation's routing inside the OpenTelemetry trace context. Every refusal answers `{error, code}`, and `field` when one body field is at fault.",
    license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
  },
  tags: [
    { name: WEBHOOK_TAG, description: 'Messages in through the webhook platform; replies out to THREADLINE_WEBHOOK_DELIVERY_URL.' },
    { name: HEALTH_TAG, description: 'Liveness and readiness, for supervisors and load balancers.' },
  ],
  components: { securitySchemes: webhookSecuritySchemes },
  webhooks: {
    delivery: {
      post: {
        summary: 'A reply or other delivery, POSTed to THREADLINE_WEBHOOK_DELIVERY_URL with traceparent, baggage and Idempotency-Key headers',
        requestBody: { required: true, content: { 'application/json': { schema: webhookDeliverySchema } } },
        responses: {
          '2XX': { description: 'Delivered.' },
          '429': { description: 'Retried later, after Retry-After when given.' },
          '4XX': { description: 'Refused for good: kept as failed, not retried.' },
          '5XX': { description: 'Retried later with backoff, as a network failure is.' },
        },
      },
    },
  },
} as Partial<OpenAPIV3_2.Document>;

/**
 * Registers @fastify/swagger, which builds an OpenAPI 3.1 document from the route schemas, and
 * serves it at OPENAPI_PATH. The plugin sees only routes added once it has loaded (add them in
 * `app.after()`), and lists only tagged ones: the Telegram and Slack routes follow those
 * platforms' contracts, not threadline's. docs/openapi.json is a copy, checked by a test.
 */
export function registerOpenApi(app: FastifyInstance): void {
  void app.register(swagger, { openapi: document, hideUntagged: true });
  // Public like /v1/health: the document holds no secret and is the same for every deployment.
  app.get(OPENAPI_PATH, async () => app.swagger());
}

export { startTestGateway, type TestGateway, type TestGatewayOptions, type SendResult, type ExpectedRouting } from './test-gateway.js';
export { DeliveryReceiver, type ReceivedDelivery, type WebhookDeliveryBody } from './delivery-receiver.js';
export { installTestTelemetry, type TestTelemetry } from './test-telemetry.js';

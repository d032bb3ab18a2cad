export { startTestGateway, TEST_SECRETS, type TestGateway, type TestGatewayOptions, type SendResult, type ExpectedRouting } from './test-gateway.js';
export { DeliveryReceiver, type ReceivedDelivery, type WebhookDeliveryBody } from './delivery-receiver.js';
export { installTestTelemetry, type TestTelemetry } from './test-telemetry.js';
export { installTestMetrics, type TestMetrics, type CollectedMetrics, type MetricPoint } from './test-metrics.js';
export { FakeTelegram, type TelegramSent } from './fake-telegram.js';
export { FakeSlack, type SlackSent } from './fake-slack.js';

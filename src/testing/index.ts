export { startTestGateway, TEST_SECRETS, type TestGateway, type TestGatewayOptions, type SendResult, type ExpectedRouting } from './test-gateway.js';
export { DeliveryReceiver, type DeliveryReceiverOptions, type ReceivedDelivery, type WebhookDeliveryBody } from './delivery-receiver.js';
export { installTestTelemetry, type TestTelemetry } from './test-telemetry.js';
export { installTestMetrics, type TestMetrics, type CollectedMetrics, type MetricPoint } from './test-metrics.js';
export {
  FakeTelegram,
  type TelegramSent,
  type TelegramFileSent,
  type TelegramAction,
  type TelegramDraft,
  type TelegramEdit,
  type TelegramMessage,
  type TelegramCall,
} from './fake-telegram.js';
export {
  FakeMattermost,
  fakeMattermostId,
  type FakeMattermostOptions,
  type MattermostPost,
  type MattermostSent,
  type MattermostEdit,
  type MattermostTyping,
  type MattermostFile,
  type MattermostCall,
} from './fake-mattermost.js';
export { FakeDiscord, FAKE_DISCORD_BOT, FAKE_DISCORD_GUILD, type DiscordSent, type DiscordShown, type DiscordEdit, type DiscordFileSent, type DiscordCall, type DiscordUserMessage, type DiscordSlashCommand, type DiscordInteractionAnswer, type DiscordFailure, type FakeDiscordOptions } from './fake-discord.js';
export { FakeDiscordGateway, type FakeGatewayStats } from './fake-discord-gateway.js';
export { FakeSlack, type SlackSent, type SlackFileSent, type SlackStatus, type SlackUpdate, type SlackMessage } from './fake-slack.js';
export {
  FakeMatrix,
  FAKE_MATRIX_SERVER,
  type MatrixSent,
  type MatrixEdit,
  type MatrixFileSent,
  type MatrixTyping,
  type MatrixShown,
  type MatrixCall,
  type MatrixEndpoint,
  type MatrixFailure,
  type FakeMatrixOptions,
} from './fake-matrix.js';
export { ManualClock, type Clock } from '../tools/clock.js';
export type { Tool, ToolResult, ToolCall } from '../tools/tool.js';
export { FakeOpenAI, MAX_RECORDED_REQUESTS, type FakeChatRequest, type FakeCompletion, type FakeOpenAIScript, type FakeAnswerOptions, type FakeToolCall, type FakeStreamedAnswer } from './fake-openai.js';
export type { Misroute, RoutingView, SpanRef, WorkRef } from '../forensics/findings.js';
export { startTestMcpServer, testMcpServer, testMcpStdioCommand, type TestMcpServer, type ReceivedRouting, type StdioCommand } from './test-mcp-server.js';
export { operatorPageUrl } from './operator-page-url.js';

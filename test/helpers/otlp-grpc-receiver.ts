import { Server, ServerCredentials, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { decodeProtobuf, type ReceivedSpan } from './otlp-receiver.js';

const same = (bytes: Buffer): Buffer => bytes;

/**
 * opentelemetry-proto's collector/trace/v1 TraceService, bytes in and out: requests are
 * decoded by the receiver's own protobuf reader, and an empty ExportTraceServiceResponse
 * (full success) is the empty message.
 */
const TRACE_SERVICE: ServiceDefinition = {
  export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: same,
    requestDeserialize: same,
    responseSerialize: same,
    responseDeserialize: same,
  },
};

/** A local OTLP/gRPC traces receiver on 127.0.0.1, over plaintext HTTP/2 as a collector's default 4317 port. */
export class OtlpGrpcReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Each export call's metadata user-agent, to tell which exporter sent it. */
  readonly userAgents = new Set<string>();

  private constructor(
    private readonly server: Server,
    private readonly port: number,
  ) {}

  static async start(): Promise<OtlpGrpcReceiver> {
    const server = new Server();
    let receiver!: OtlpGrpcReceiver;
    const implementation: UntypedServiceImplementation = {
      export: (call: { request: Buffer; metadata: { get(key: string): unknown[] } }, callback: (error: null, response: Buffer) => void) => {
        for (const agent of call.metadata.get('user-agent')) receiver.userAgents.add(String(agent));
        receiver.spans.push(...decodeProtobuf(call.request));
        callback(null, Buffer.alloc(0));
      },
    };
    server.addService(TRACE_SERVICE, implementation);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    receiver = new OtlpGrpcReceiver(server, port);
    return receiver;
  }

  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to: http:// makes the exporter use plaintext. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.tryShutdown(() => resolve());
    });
  }
}

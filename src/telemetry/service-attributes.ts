import { ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

/** The resource attributes threadline sets itself; OTEL_RESOURCE_ATTRIBUTES, detected at start, still overrides them. */
export function serviceAttributes(service: { serviceVersion: string; serviceInstanceId?: string | undefined }): Record<string, string> {
  return {
    [ATTR_SERVICE_VERSION]: service.serviceVersion,
    ...(service.serviceInstanceId === undefined ? {} : { 'service.instance.id': service.serviceInstanceId }),
  };
}

/** Deliveries this instance's sender finished since start, for /v1/health. */
export interface OutboxStats {
  readonly delivered: number;
  readonly retried: number;
  readonly failed: number;
}

import type { InstanceLiveness } from '../../../src/tools/tool-services.js';

/**
 * Heartbeats as Redis would tell them, shared by a test's instances: an instance is alive
 * until `die()`; a claim is taken once, as SET NX is, until `expireClaims()`.
 */
export class FakeLiveness implements InstanceLiveness {
  private readonly dead = new Set<string>();
  private readonly claims = new Set<string>();
  /** Whether this instance's own heartbeat has been steady for a lease. */
  steady = true;
  /** Every isAlive asked, for a test that checks who was looked at. */
  readonly asked: string[] = [];

  /** Default: an hour, so only the test's own sweep() calls run a pass. */
  constructor(readonly checkEveryMs = 3_600_000) {}

  die(instanceId: string): void {
    this.dead.add(instanceId);
  }

  async isAlive(instanceId: string): Promise<boolean> {
    this.asked.push(instanceId);
    return !this.dead.has(instanceId);
  }

  canJudge(): boolean {
    return this.steady;
  }

  async claimLost(processId: string): Promise<boolean> {
    if (this.claims.has(processId)) return false;
    this.claims.add(processId);
    return true;
  }

  /** Every claim's lease ran out (its claimer died, say). */
  expireClaims(): void {
    this.claims.clear();
  }
}

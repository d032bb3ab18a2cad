// A vitest reporter for `.ci/run`: one line per project, from its first file queued to its last
// file done (projects of one sequence group overlap), with its files' own time added up.
// THREADLINE_PHASE_SINCE (epoch ms, set just before `npm test`) adds what came before vitest: the typecheck.
import type { Reporter, TestModule } from 'vitest/node';

interface Phase {
  first: number;
  last: number;
  files: number;
  fileMs: number;
}

export default class PhaseTimes implements Reporter {
  private readonly phases = new Map<string, Phase>();
  private readonly queuedAt = new Map<TestModule, number>();

  onInit(): void {
    const since = Number(process.env['THREADLINE_PHASE_SINCE']);
    if (since > 0) console.log(`== phase npm test until vitest started (the typecheck runs beside it): ${seconds(Date.now() - since)}`);
  }

  onTestModuleQueued(module: TestModule): void {
    this.queuedAt.set(module, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const now = Date.now();
    const queued = this.queuedAt.get(module) ?? now;
    const name = module.project.name || 'root';
    const phase = this.phases.get(name) ?? { first: queued, last: now, files: 0, fileMs: 0 };
    phase.first = Math.min(phase.first, queued);
    phase.last = Math.max(phase.last, now);
    phase.files++;
    phase.fileMs += module.diagnostic().duration;
    this.phases.set(name, phase);
  }

  onTestRunEnd(): void {
    for (const [name, phase] of this.phases) {
      console.log(`== phase ${name} project: ${seconds(phase.last - phase.first)} wall, ${phase.files} files, ${seconds(phase.fileMs)} of file time`);
    }
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

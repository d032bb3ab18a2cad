import { describe, expect, it } from 'vitest';
import { argumentsOf, parseCron, parseRemind, parseRun, parseSend } from '../../../src/gateway/commands/command-arguments.js';
import { ThreadlineError } from '../../../src/errors.js';

function usageError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ThreadlineError);
    expect((error as ThreadlineError).code).toBe('TL_TOOL_INPUT');
    return (error as Error).message;
  }
  throw new Error('expected a usage error');
}

describe('command arguments', () => {
  it('argumentsOf drops the command word and a @botname suffix', () => {
    expect(argumentsOf('/run@threadline_bot  make test ')).toBe('make test');
    expect(argumentsOf('/jobs')).toBe('');
  });

  it('/run runs in the background and reports the end; --every adds progress', () => {
    expect(parseRun('make -j2 test')).toEqual({
      tool: 'terminal',
      args: { command: 'make -j2 test', background: true, notify_on_complete: true },
    });
    expect(parseRun('--every 60 ./long.sh --flag')).toEqual({
      tool: 'terminal',
      args: { command: './long.sh --flag', background: true, notify_on_complete: true, check_interval: 60 },
    });
    expect(usageError(() => parseRun(''))).toContain('/run [--every <seconds>] <cmd>');
    expect(usageError(() => parseRun('--every 1.5 ls'))).toContain('whole seconds');
    expect(usageError(() => parseRun('--every 60'))).toContain('usage');
  });

  it('/remind takes a delay and the text', () => {
    expect(parseRemind('10m stand up')).toEqual({ tool: 'remind', args: { delay: '10m', text: 'stand up' } });
    expect(parseRemind('10 m stand up')).toEqual({ tool: 'remind', args: { delay: '10m', text: 'stand up' } });
    expect(parseRemind('90 stretch')).toEqual({ tool: 'remind', args: { delay: '90', text: 'stretch' } });
    expect(usageError(() => parseRemind('10m'))).toContain('/remind <n>s|m|h|d <text>');
  });

  it('/cron reads a quoted expression, straight or typographic, an optional target, and list/rm', () => {
    expect(parseCron('"0 9 * * 1-5" standup')).toEqual({ tool: 'schedule', args: { cron: '0 9 * * 1-5', text: 'standup' } });
    expect(parseCron('“*/5 * * * *” --to home ping')).toEqual({ tool: 'schedule', args: { cron: '*/5 * * * *', text: 'ping', target: 'home' } });
    expect(parseCron('list')).toEqual({ tool: 'list_schedules', args: {} });
    expect(parseCron('rm c12345')).toEqual({ tool: 'remove_schedule', args: { id: 'c12345' } });
    expect(usageError(() => parseCron('0 9 * * * standup'))).toContain('/cron "<expression>"');
    expect(usageError(() => parseCron('"0 9 * * *"'))).toContain('usage');
    expect(usageError(() => parseCron('"0 9 * * *" --to home'))).toContain('--to <target> <text>');
    expect(usageError(() => parseCron('"0 9 * * *" --to'))).toContain('--to <target> <text>');
  });

  it('/send takes a target and the text', () => {
    expect(parseSend('slack:C1:1700.1 deploy done')).toEqual({ tool: 'send_message', args: { target: 'slack:C1:1700.1', text: 'deploy done' } });
    expect(usageError(() => parseSend('home'))).toContain('/send <target> <text>');
  });
});

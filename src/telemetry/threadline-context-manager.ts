import { ROOT_CONTEXT, context, createContextKey } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { setActiveContextReader } from '../session/index.js';

const PROBE = createContextKey('threadline.adopt-probe');

/**
 * The AsyncLocalStorage context manager, which, once it is the registered one, lets session
 * reads ask it directly instead of through the API's global lookup (see activeContext), and
 * takes that shortcut away again when it is disabled.
 */
export class ThreadlineContextManager extends AsyncLocalStorageContextManager {
  private adopted = false;

  override disable(): this {
    if (this.adopted) setActiveContextReader(undefined);
    this.adopted = false;
    return super.disable();
  }

  /**
   * Installs the shortcut if this manager is the one the API uses: a context set through
   * context.with() must be what this manager reads. Returns whether it is.
   */
  adoptIfRegistered(): boolean {
    const registered = context.with(ROOT_CONTEXT.setValue(PROBE, this), () => this.active().getValue(PROBE) === this);
    if (registered) setActiveContextReader(() => this.active());
    this.adopted = registered;
    return registered;
  }
}

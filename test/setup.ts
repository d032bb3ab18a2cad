// Every test process gets the AsyncLocalStorage context manager and threadline's
// propagators, as the telemetry bootstrap gives the running gateway.
import { installContext } from '../src/telemetry/index.js';

installContext();

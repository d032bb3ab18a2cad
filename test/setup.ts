// Every test process gets the AsyncLocalStorage context manager and threadline's
// propagators, as the telemetry bootstrap gives the running gateway.
// Its own module, not the telemetry index: that one loads the whole SDK into every test file.
import { installContext } from '../src/telemetry/install-context.js';

installContext();

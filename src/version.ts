/** package.json's version (kept equal by `npm version` and a test): service.version, the tracer's version, --version. */
export const VERSION = '0.1.0';

/** package.json's version: service.version, the tracer's version, --version. `npm version` rewrites it (src/config/sync-version.ts); a test keeps them equal. */
export const VERSION = '0.1.0';

export * from './errors.js';
export * from './session/index.js';

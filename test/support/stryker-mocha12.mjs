// Lets StrykerJS's mocha runner (9.x) load Mocha 12. The runner reaches into Mocha's CLI internals
// with extensionless `require`s (`mocha/lib/cli/run-helpers`, `.../options`, `.../collect-files`), and
// Mocha 12 renamed those files to `.cjs`, which `require` does not try on its own (upstream:
// stryker-js pull request 6205). Registering `.cjs` as a CommonJS extension makes them resolve.
// Loaded by stryker.config.mjs (Stryker's own process) and by every test-runner process it starts.
import { Module } from 'node:module';

const extensions = /** @type {Record<string, unknown>} */ (/** @type {any} */ (Module)._extensions);
extensions['.cjs'] ??= extensions['.js'];

/** `npm run docs:config`: writes docs/configuration.md from the settings table. Not shipped. */
import { writeFileSync } from 'node:fs';
import { CONFIGURATION_DOC_PATH, renderConfigurationDoc } from './configuration-doc.js';

writeFileSync(new URL(`../../${CONFIGURATION_DOC_PATH}`, import.meta.url), renderConfigurationDoc());
process.stdout.write(`wrote ${CONFIGURATION_DOC_PATH}\n`);

// The inventory layer's public face: what the CLI and the engine use.
export { checkArtifacts,    } from './artifacts.ts';
;
export {  parseBastion, resolveFrom,  } from './derive.ts';
export { fromText, loadInventory, type LoadedInventory,  } from './load.ts';
export {  renderSchemaFile } from './schema.ts';
;
export { toValidateJson, validateInventory,   } from './validate.ts';
;

// The inventory layer's public face: what the CLI and the engine use.
export { checkArtifacts, nodeArtifactFs, type ArtifactFs, type EntryKind } from './artifacts.ts';
export { checkContracts, isRfc1123Label, type ContractResult } from './contracts.ts';
export { deriveInventory, parseBastion, resolveFrom, type DeriveOptions } from './derive.ts';
export { fromText, loadInventory, type LoadedInventory, type LoadOptions } from './load.ts';
export { inventorySchema, renderSchemaFile } from './schema.ts';
export type { Agent, Derived, Endpoint, Inventory, InventoryWarning, ResolvedPaths, Server, Waiver } from './types.ts';
export { toValidateJson, validateInventory, type ValidateJson, type ValidationResult } from './validate.ts';
export { isWaivable, WAIVABLE_CAUSES, type WaivableCauseId } from './waivers.ts';

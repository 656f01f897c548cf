// What the bootstrap needs from the Cilium chart tgz: its version (must be the HelmRelease's) and its
// values.schema.json (the values must satisfy it, or Helm refuses the install).
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { CauseError } from '../../src/errors.ts';
import { tarFiles } from '../../src/util/tar.ts';
import { gunzipSync } from 'node:zlib';

export interface ChartInfo {
  name: string;
  version: string;
  /** values.schema.json, when the chart has one (Cilium from 1.16). */
  schema?: Record<string, unknown>;
}

/**
 * Reads Chart.yaml and values.schema.json of the chart's top folder. ARTIFACT_INVALID (naming `chartPath`)
 * for a file that is no gzip-compressed Helm chart: garbage bytes, a plain tar, a torn download, a
 * Chart.yaml or schema that does not parse. The cilium phase reads it in its prepare, before any host.
 */
export function chartInfo(tgz: Buffer, chartPath = 'the chart'): ChartInfo {
  const invalid = (why: string) =>
    new CauseError('ARTIFACT_INVALID', {
      message: `cilium.chart: ${chartPath} ${why}`,
      evidence: { command: `tar -tzf ${chartPath}`, seen: `${chartPath} ${why}` },
    });
  let files: Map<string, Buffer>;
  try {
    files = tarFiles(gunzipSync(tgz));
  } catch (err) {
    throw invalid(`is not a gzip-compressed tar archive (${(err as Error).message})`);
  }
  const chartYaml = [...files.keys()].find((n) => /^[^/]+\/Chart\.yaml$/.test(n));
  if (!chartYaml) throw invalid('holds no <chart>/Chart.yaml: not a Helm chart');
  const top = chartYaml.split('/')[0];
  try {
    const meta = parse(files.get(chartYaml)!.toString('utf8')) as { name?: string; version?: string } | null;
    const schemaFile = files.get(`${top}/values.schema.json`);
    return {
      name: String(meta?.name ?? top),
      version: String(meta?.version ?? ''),
      schema: schemaFile ? (JSON.parse(schemaFile.toString('utf8')) as Record<string, unknown>) : undefined,
    };
  } catch (err) {
    throw invalid(`has a Chart.yaml or values.schema.json that does not parse (${(err as Error).message})`);
  }
}

/**
 * CHART_VERSION_MISMATCH when the HelmRelease pins an exact version the chart is not. A range (or no
 * version) is not checked here: Flux picks within it, and this cannot know which it will pick.
 */
export function checkChartVersion(pinned: string | undefined, chart: ChartInfo, chartPath: string): CauseError[] {
  if (!pinned || !/^v?\d+\.\d+\.\d+(?:[-+][\w.-]+)?$/.test(pinned)) return [];
  if (pinned.replace(/^v/, '') === chart.version.replace(/^v/, '')) return [];
  return [
    new CauseError('CHART_VERSION_MISMATCH', {
      evidence: { seen: `the HelmRelease pins ${chart.name} ${pinned}, the chart ${chartPath} is ${chart.version}`, excerpt: 'spec.chart.spec.version' },
    }),
  ];
}

// Compiling Cilium's 160 kB schema takes a few hundred ms (over a second on a small machine): once per schema
// object, and a run whose chart and values are those of an earlier run does not compile it at all
// (phases/cilium.ts remembers the violations).
const compiled = new WeakMap<object, ValidateFunction>();

/** One place Cilium's values break the chart's values.schema.json: what the stop says (plain data, so it can be remembered). */
export interface SchemaViolation {
  seen: string;
  excerpt: string;
}

export function schemaViolations(values: unknown, schema: Record<string, unknown> | undefined): SchemaViolation[] {
  if (!schema) return [];
  let validate = compiled.get(schema);
  if (!validate) {
    validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(values)) return [];
  return (validate.errors ?? []).map((e) => {
    const path = `spec.values${e.instancePath.replace(/\/([^/]+)/g, (_, k: string) => (/^\d+$/.test(k) ? `[${k}]` : `.${k.replaceAll('~1', '/').replaceAll('~0', '~')}`))}`;
    const seen = `${path} ${e.message ?? 'is invalid'}${e.params && 'allowedValues' in e.params ? ` (${JSON.stringify(e.params.allowedValues)})` : ''}`;
    return { seen, excerpt: `schema ${e.schemaPath}` };
  });
}

/** VALUES_SCHEMA_INVALID, one per violation, each with the values path (as Helm validates user values). */
export const schemaStops = (violations: SchemaViolation[]): CauseError[] =>
  violations.map(({ seen, excerpt }) => new CauseError('VALUES_SCHEMA_INVALID', { message: `Cilium values: ${seen}`, evidence: { seen, excerpt } }));

export function checkValuesSchema(values: unknown, schema: Record<string, unknown> | undefined): CauseError[] {
  return schemaStops(schemaViolations(values, schema));
}

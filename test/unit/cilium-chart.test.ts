import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { chartInfo, checkChartVersion, checkValuesSchema } from '../../phases/cilium/chart.ts';
import { renderHelmChart, valuesContent } from '../../src/k3s/helmchart.ts';
import { tarFiles } from '../../src/util/tar.ts';
import { ciliumValues } from '../../src/gitops/values-source.ts';
import { cli } from '../support/cli.ts';

// The real chart, kept beside the repository (never committed): ../shared/testdata/cilium-1.19.5.tgz.
const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
const checkout = fileURLToPath(new URL('../fixtures/gitops/', import.meta.url));

describe('the real Cilium chart', () => {
  it('is present for the tests (CI must provide ../shared/testdata/cilium-1.19.5.tgz)', () => {
    expect(existsSync(CHART), CHART).toBe(true);
  });

  const tgz = () => readFileSync(CHART);

  it('yields its version and values.schema.json', () => {
    const info = chartInfo(tgz());
    expect(info).toMatchObject({ name: 'cilium', version: '1.19.5' });
    expect(info.schema?.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect((info.schema?.properties as Record<string, unknown>).k8sServiceHost).toEqual({ type: 'string' });
  });

  it("accepts the fixture's substituted values for every environment", async () => {
    const { schema } = chartInfo(tgz());
    for (const env of ['lab', 'prod', 'dev']) {
      const v = await ciliumValues({ checkout, helmReleasePath: 'platform/cilium/helmrelease.yaml', clusterPath: `clusters/${env}` });
      expect(checkValuesSchema(v.values, schema), env).toEqual([]);
    }
  });

  it('VALUES_SCHEMA_INVALID names each values path the schema refuses', () => {
    const { schema } = chartInfo(tgz());
    const stops = checkValuesSchema({ k8sServiceHost: 42, hubble: { enabled: 'yes' }, ipam: { operator: { clusterPoolIPv4MaskSize: '24' } } }, schema);
    expect(stops.every((s) => s.causeId === 'VALUES_SCHEMA_INVALID')).toBe(true);
    const seen = stops.map((s) => s.evidence.seen);
    expect(seen).toContain('spec.values.k8sServiceHost must be string');
    expect(seen).toContain('spec.values.hubble.enabled must be boolean');
    expect(seen).toContain('spec.values.ipam.operator.clusterPoolIPv4MaskSize must be integer');
    expect(stops).toHaveLength(3);
  });

  it('CHART_VERSION_MISMATCH when the HelmRelease pins another version; a range is not judged', () => {
    const info = chartInfo(tgz());
    expect(checkChartVersion('1.19.5', info, 'cilium.tgz')).toEqual([]);
    const [s] = checkChartVersion('1.20.1', info, 'cilium.tgz');
    expect(s.causeId).toBe('CHART_VERSION_MISMATCH');
    expect(s.evidence.seen).toBe('the HelmRelease pins cilium 1.20.1, the chart cilium.tgz is 1.19.5');
    expect(checkChartVersion('1.19.x', info, 'cilium.tgz')).toEqual([]);
  });
});

describe('reading tar archives', () => {
  function header(name: string, size: number, type = '0', prefix = ''): Buffer {
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write(size.toString(8).padStart(11, '0'), 124);
    h.write(type, 156);
    h.write('ustar', 257);
    h.write(prefix, 345);
    return h;
  }
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);

  it('follows ustar prefixes, GNU long names and pax paths', () => {
    const long = `c/${'x'.repeat(120)}.yaml`;
    const pax = Buffer.from('30 path=p/from-pax/values.yaml\n');
    const tar = Buffer.concat([
      header('Chart.yaml', 3, '0', 'a'),
      pad(Buffer.from('abc')),
      header('././@LongLink', long.length + 1, 'L'),
      pad(Buffer.from(`${long}\0`)),
      header('ignored', 4),
      pad(Buffer.from('long')),
      header('PaxHeader', pax.length, 'x'),
      pad(pax),
      header('short', 3),
      pad(Buffer.from('pax')),
      header('dir/', 0, '5'),
      Buffer.alloc(1024),
    ]);
    const files = tarFiles(tar);
    expect([...files.keys()]).toEqual(['a/Chart.yaml', long, 'p/from-pax/values.yaml']);
    expect(files.get(long)?.toString()).toBe('long');
    expect(() => chartInfo(gzipSync(Buffer.concat([header('README.md', 0), Buffer.alloc(1024)])))).toThrow('not a Helm chart');
  });
});

describe('the HelmChart that installs Cilium', () => {
  const chartTgz = Buffer.from([0x1f, 0x8b, 1, 2, 3, 250]);
  const values = {
    kubeProxyReplacement: true,
    k8sServiceHost: '192.168.2.9',
    bpf: { masquerade: true },
    ipam: { operator: { clusterPoolIPv4PodCIDRList: ['10.42.0.0/16'] }, mode: 'cluster-pool' },
  };
  const render = (v: Record<string, unknown> = values) =>
    renderHelmChart({ releaseName: 'cilium', namespace: 'kube-system', chartTgz, values: v, version: '1.19.5' });

  it('is a bootstrap HelmChart carrying the chart and the values, named as the Flux release', () => {
    const doc = parse(render());
    expect(doc).toMatchObject({ apiVersion: 'helm.cattle.io/v1', kind: 'HelmChart', metadata: { name: 'cilium', namespace: 'kube-system' } });
    expect(doc.spec.bootstrap).toBe(true);
    expect(doc.spec.targetNamespace).toBe('kube-system');
    expect(doc.spec.version).toBe('1.19.5');
    expect(Buffer.from(doc.spec.chartContent, 'base64').equals(chartTgz)).toBe(true);
    expect(parse(doc.spec.valuesContent)).toEqual(values);
  });

  it('folds the real chart into short lines that read back as the same bytes, after the values', () => {
    const tgz = readFileSync(CHART);
    const text = renderHelmChart({ releaseName: 'cilium', namespace: 'kube-system', chartTgz: tgz, values, version: '1.19.5' });
    expect(Math.max(...text.split('\n').map((l) => l.length))).toBeLessThan(120);
    expect(Buffer.from(parse(text).spec.chartContent, 'base64').equals(tgz)).toBe(true);
    expect(text.indexOf('valuesContent:')).toBeLessThan(text.indexOf('chartContent:'));
  });

  it('writes the same bytes whatever order the values keys come in', () => {
    const shuffled = {
      ipam: { mode: 'cluster-pool', operator: values.ipam.operator },
      bpf: values.bpf,
      k8sServiceHost: '192.168.2.9',
      kubeProxyReplacement: true,
    };
    expect(render(shuffled)).toBe(render());
    expect(valuesContent(shuffled).split('\n')[1]).toBe('  "bpf": {');
    expect(render({ ...values, k8sServiceHost: '192.168.2.8' })).not.toBe(render());
  });

  it('writes values that YAML 1.1 (Helm, through klipper-helm) and YAML 1.2 read the same', () => {
    const words = { a: 'on', b: 'yes', c: 'off', d: 'y', e: 'NO', f: '0x10', g: '1e3', h: '~' };
    const text = valuesContent(words);
    expect(parse(text, { version: '1.1' })).toEqual(words);
    expect(parse(text, { version: '1.2' })).toEqual(words);
    // What a YAML writer would have produced is read differently by Helm: the reason for JSON.
    expect(parse('a: on\nb: yes\n', { version: '1.1' })).toEqual({ a: true, b: true });
  });
});

describe('a cilium.chart that is no gzip-compressed Helm chart', () => {
  it('is ARTIFACT_INVALID naming the file, not a plain Error', () => {
    for (const bytes of [Buffer.from('<html>404 Not Found</html>'), Buffer.from([0x1f, 0x8b, 1, 2, 3, 250]), gzipSync('not a tar archive at all')]) {
      let err: unknown;
      try {
        chartInfo(bytes, '/charts/cilium.tgz');
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ causeId: 'ARTIFACT_INVALID', message: expect.stringContaining('cilium.chart: /charts/cilium.tgz ') });
    }
  });

  it('stops `bootstrap prod --only cilium` in its prepare with ARTIFACT_INVALID (exit 1, a stopped object), before any host is dialled', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chart-garbage-'));
    try {
      mkdirSync(join(dir, 'k3s'));
      writeFileSync(join(dir, 'k3s', 'k3s'), '');
      writeFileSync(join(dir, 'id_ed25519'), '');
      writeFileSync(join(dir, 'cilium.tgz'), 'garbage bytes, not a gzip tarball\n');
      const prod = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
      const text = prod
        .replace('identityFile: ~/.ssh/id_ed25519', `identityFile: ${join(dir, 'id_ed25519')}`)
        .replace('artifacts: ../artifacts/k3s', `artifacts: ${join(dir, 'k3s')}`)
        .replace('checkout: ../home-network', `checkout: ${checkout}`)
        .replace('chart: ../artifacts/cilium-1.19.5.tgz', `chart: ${join(dir, 'cilium.tgz')}`)
        .replace(/^flux:\n(?: {2}.*\n)+/m, '');
      writeFileSync(join(dir, 'prod.yaml'), text);
      vi.stubEnv('BOOTSTRAP_SSH_CONFIG', join(dir, 'no-ssh-config')); // not the operator's own
      const t0 = Date.now();
      const r = await cli(['prod', '--inventory', join(dir, 'prod.yaml'), '--only', 'cilium', '--check', '--json'], {
        BOOTSTRAP_STATE_DIR: join(dir, 'state'),
      });
      expect(r.code, r.stderr).toBe(1);
      const events = r.stdout.split('\n').map((l) => JSON.parse(l));
      // Nothing between the start and the stop: no connection, no lock, no probe.
      expect(events.map((e) => e.type)).toEqual(['run-start', 'stopped', 'run-end']);
      const stops = events.filter((e) => e.type === 'stopped');
      expect(stops).toEqual([{ type: 'stopped', error: expect.objectContaining({ cause: 'ARTIFACT_INVALID', remedy: expect.stringContaining('tar -tzf') }) }]);
      expect(stops[0].error.message).toContain(`${join(dir, 'cilium.tgz')} is not a gzip-compressed tar archive`);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The operator's view of the API during a rolling change: GET /readyz through the VIP every 200 ms, and each
// server's own /readyz every second (how many servers serve: etcd keeps quorum while a majority does), from
// this machine with the admin kubeconfig's CA and client certificate. No process per probe: plain HTTPS.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { parse } from 'yaml';

interface Creds {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function credsOf(kubeconfig: string): Creds {
  const doc = parse(readFileSync(kubeconfig, 'utf8'));
  const b64 = (s: string) => Buffer.from(s, 'base64');
  return {
    ca: b64(doc.clusters[0].cluster['certificate-authority-data']),
    cert: b64(doc.users[0].user['client-certificate-data']),
    key: b64(doc.users[0].user['client-key-data']),
  };
}

function readyz(address: string, creds: Creds, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    // No servername: the address is an IP, which SNI cannot carry (Node warns DEP0123); the certificate is
    // still checked against it (an IP SAN).
    const req = request({ host: address, port: 6443, path: '/readyz', method: 'GET', ...creds, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'ok'));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

export interface ApiWatch {
  /** Ends the probing; what was seen. */
  stop(): Promise<ApiWatchResult>;
}

interface ApiWatchResult {
  probes: number;
  failed: number;
  /** The longest time without a successful probe through the VIP, in ms. */
  longestGapMs: number;
  /** Seconds sampled, and the fewest servers that served in any one of them. */
  samples: number;
  fewestServing: number;
}

export function watchApi(kubeconfig: string, vip: string, servers: string[]): ApiWatch {
  const creds = credsOf(kubeconfig);
  let running = true;
  let probes = 0;
  let failed = 0;
  let lastOk = Date.now();
  let longestGapMs = 0;
  let samples = 0;
  let fewestServing = servers.length;
  const vipLoop = (async () => {
    while (running) {
      const t = Date.now();
      const ok = await readyz(vip, creds, 1_000);
      probes++;
      if (ok) {
        longestGapMs = Math.max(longestGapMs, Date.now() - lastOk);
        lastOk = Date.now();
      } else failed++;
      await new Promise((r) => setTimeout(r, Math.max(0, 200 - (Date.now() - t))));
    }
    longestGapMs = Math.max(longestGapMs, Date.now() - lastOk);
  })();
  const quorumLoop = (async () => {
    while (running) {
      const t = Date.now();
      const serving = (await Promise.all(servers.map((s) => readyz(s, creds, 900)))).filter(Boolean).length;
      samples++;
      fewestServing = Math.min(fewestServing, serving);
      await new Promise((r) => setTimeout(r, Math.max(0, 1_000 - (Date.now() - t))));
    }
  })();
  return {
    async stop() {
      running = false;
      await Promise.all([vipLoop, quorumLoop]);
      return { probes, failed, longestGapMs, samples, fewestServing };
    },
  };
}

// The VIP gate: the control-plane VIP answers on its port with a TLS handshake that verifies against the
// cluster CA — from every server, and from the operator's side. When it does not, the cause is named from
// what is seen (kube-vip's log, the lease, RBAC, the certificate), never a generic timeout.
import { connect } from 'node:tls';
import { CauseError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { Gate, HostRef } from '../../src/engine/phase.ts';
import { founderRef } from '../hosts.ts';
import { excerpt, kubectl, NOT_FOUND, pause } from '../k3s/remote-k3s.ts';
import { DATA_DIR } from '../k3s/render.ts';
import { matchKubeVipLog } from './log-causes.ts';
import { KUBE_VIP_DAEMONSET, KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from './render.ts';

export const SERVER_CA = `${DATA_DIR}/server/tls/server-ca.crt`;
const POLL_MS = 2_000;

type Answer = { ok: true } | { ok: false; certificate: boolean; seen: string; command: string; exitCode?: number | null };

/** From a server: curl verifying the cluster CA. Any HTTP status is an answer (401 without credentials). */
async function answerFromServer(ctx: RunContext, host: HostRef): Promise<Answer> {
  const { host: vip, port } = ctx.inventory.derived.apiEndpoint;
  const command = `curl -sS -o /dev/null -w '%{http_code}' --connect-timeout 3 --max-time 5 --cacert ${SERVER_CA} https://${vip}:${port}/livez`;
  const res = await ctx.remote(host).exec(command, { sudo: true, timeoutMs: 15_000, signal: ctx.signal });
  if (res.code === 0 && /^\d{3}$/.test(res.stdout.trim()) && res.stdout.trim() !== '000') return { ok: true };
  // curl 60: the certificate did not verify (an address missing from the SANs, or another CA).
  return { ok: false, certificate: res.code === 60, seen: `from ${host.name}: ${(res.stderr || res.stdout).trim() || `curl exit ${res.code}`}`, command, exitCode: res.code };
}

/** From the operator's machine: a TLS handshake to the VIP verifying against the CA read from a server. */
async function answerFromOperator(ctx: RunContext, ca: string): Promise<Answer> {
  const { host, port } = ctx.inventory.derived.apiEndpoint;
  const command = `TLS handshake to ${host}:${port} from the operator's machine, verifying the cluster CA`;
  return new Promise((resolve) => {
    const socket = connect({ host, port, ca, servername: undefined, timeout: 3_000 }, () => {
      socket.end();
      resolve({ ok: true });
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ ok: false, certificate: false, seen: `from the operator: no answer within 3 s`, command });
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const certificate = /ERR_TLS_CERT_ALTNAME_INVALID|CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(err.code ?? '');
      resolve({ ok: false, certificate, seen: `from the operator: ${err.message}`, command });
    });
  });
}

/** What kube-vip says and holds, to name the cause. */
async function diagnose(ctx: RunContext, host: HostRef, last: Answer & { ok: false }): Promise<CauseError> {
  const founder = founderRef(ctx.inventory)[0];
  const logs = await kubectl(ctx, founder, `logs -n ${KUBE_VIP_NAMESPACE} -l app.kubernetes.io/name=${KUBE_VIP_DAEMONSET} --tail=40 --prefix`).catch(() => undefined);
  const logText = logs?.code === 0 ? logs.stdout : '';
  const known = matchKubeVipLog(logText);
  if (known) return new CauseError(known.causeId, { host: host.name, evidence: { command: `kubectl logs -n ${KUBE_VIP_NAMESPACE} -l app.kubernetes.io/name=${KUBE_VIP_DAEMONSET}`, seen: known.line, excerpt: excerpt(logText, 15) } });
  if (last.certificate) return new CauseError('VIP_CERT_MISSING_SAN', { host: host.name, evidence: { command: last.command, exitCode: last.exitCode, seen: last.seen } });
  const rbac = await kubectl(ctx, founder, 'get clusterrole system:kube-vip-role -o name').catch(() => undefined);
  if (rbac && rbac.code !== 0 && NOT_FOUND.test(rbac.stderr)) {
    return new CauseError('KUBE_VIP_RBAC_MISSING', { host: host.name, evidence: { command: 'kubectl get clusterrole system:kube-vip-role', exitCode: rbac.code, seen: rbac.stderr.trim() } });
  }
  const lease = await kubectl(ctx, founder, `get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE} -o jsonpath='{.spec.holderIdentity}'`).catch(() => undefined);
  const holder = lease?.code === 0 ? lease.stdout.trim() : '';
  if (!holder) {
    return new CauseError('VIP_LEASE_NOT_HELD', { host: host.name, evidence: { command: `kubectl get lease -n ${KUBE_VIP_NAMESPACE} ${KUBE_VIP_LEASE}`, seen: `no holder; ${last.seen}`, excerpt: excerpt(logText, 15) || '(no kube-vip log)' } });
  }
  return new CauseError('VIP_NOT_ANSWERING', { host: host.name, evidence: { command: last.command, exitCode: last.exitCode, seen: `the lease is held by ${holder}, but ${last.seen}` } });
}

/** Budget: k3s applies the manifest, kube-vip starts and one lease duration passes, with a wide margin. */
export const VIP_BUDGET_MS = 60_000 + LEASE_TIMING.duration * 4_000;

export const vipAnswers: Gate = {
  id: 'vip-answers',
  title: 'control-plane VIP answers with the cluster certificate',
  budgetMs: VIP_BUDGET_MS,
  async run(host, ctx, signal) {
    // The operator's side is checked once, by the founder's gate.
    const ca = host.founder ? (await ctx.remote(host).exec(`cat ${SERVER_CA}`, { sudo: true, timeoutMs: 15_000 })).stdout : '';
    let last: Answer = { ok: false, certificate: false, seen: 'not tried', command: '' };
    do {
      last = await answerFromServer(ctx, host);
      if (last.ok && host.founder) last = await answerFromOperator(ctx, ca);
      if (last.ok) return;
      // A known failure in kube-vip's log needs no waiting out.
      const early = await diagnose(ctx, host, last);
      if (early.causeId !== 'VIP_LEASE_NOT_HELD' && early.causeId !== 'VIP_NOT_ANSWERING') throw early;
    } while (await pause(ctx, POLL_MS, signal));
    throw await diagnose(ctx, host, last as Answer & { ok: false });
  },
};

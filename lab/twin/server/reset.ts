// `k3s server --cluster-reset [--cluster-reset-restore-path=<snapshot>]` (k3s pkg/etcd/etcd.go Reset,
// docs cli/etcd-snapshot, backup-restore): restore the snapshot (or keep the data) as a one-member cluster,
// check the token still opens the bootstrap data, log that membership was reset, and exit.
import { execFileSync } from 'node:child_process';
import { existsSync, renameSync, statSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { str } from '../config.ts';
import { isInitialized, peerURL } from '../etcd/process.ts';
import { log } from '../log.ts';
import { readCAs, tlsPaths } from '../pki.ts';
import { localEtcd, secretFromConfigOrFile, writeToken, type Ctx } from './bootstrap.ts';
import { checkBootstrapToken, waitForQuorumRead } from './datastore.ts';
import { memberName, runMember } from './etcd-member.ts';
import { labTool } from '../tools.ts';

export const RESET_DONE =
  'Managed etcd cluster membership has been reset, restart without --cluster-reset flag now. Backup and delete ${datadir}/server/db on each peer etcd server and rejoin the nodes';

export async function clusterReset(c: Ctx): Promise<void> {
  const restore = str(c.s, 'cluster-reset-restore-path');
  const secret = secretFromConfigOrFile(c);
  if (!secret) log.fatal(`${c.p.token} does not exist, please pass --token to complete the restoration`);
  const ts = Math.floor(Date.now() / 1000);
  let name: string;
  if (restore) {
    if (!existsSync(restore)) log.fatal(`etcd: snapshot path does not exist: ${restore}`);
    if (statSync(restore).isDirectory()) log.fatal(`etcd: snapshot path must be a file, not a directory: ${restore}`);
    const tmp = `${c.p.etcd}-restore-${ts}`;
    rmSync(tmp, { recursive: true, force: true });
    name = `${c.node}-${Math.random().toString(16).slice(2, 10).padEnd(8, '0')}`;
    log.info(`Pre-restore etcd database moved to ${c.p.etcd}-old-${ts}`);
    execFileSync(
      labTool('etcdctl'),
      [
        'snapshot',
        'restore',
        restore,
        `--name=${name}`,
        `--initial-cluster=${name}=${peerURL(c.ip)}`,
        `--initial-advertise-peer-urls=${peerURL(c.ip)}`,
        `--data-dir=${tmp}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    if (existsSync(c.p.etcd)) renameSync(c.p.etcd, `${c.p.etcd}-old-${ts}`);
    mkdirSync(c.p.db, { recursive: true });
    renameSync(tmp, c.p.etcd);
    writeFileSync(c.p.etcdName, name, { mode: 0o600 });
  } else {
    if (!isInitialized(c.p.etcd)) log.fatal('etcd: cluster-reset requires an existing etcd datastore');
    name = memberName(c.p.etcdName, c.node);
  }
  log.info('Managed etcd cluster initializing with cluster-reset');
  const member = runMember({
    name,
    dataDir: c.p.etcd,
    nodeIP: c.ip,
    listenLoopback: c.listenLoopback,
    initialCluster: `${name}=${peerURL(c.ip)}`,
    state: 'existing',
    forceNewCluster: !restore,
  });
  let finished = false;
  void member.child.exited.then((code) => finished || log.fatal(`etcd exited during cluster reset: ${member.lastError() || `exit status ${code}`}`));
  const etcd = localEtcd(c);
  await waitForQuorumRead(etcd, false);
  const tls = tlsPaths(c.p.dataDir);
  await checkBootstrapToken(etcd, secret!, tls);
  // Only a token that opened the bootstrap data is written back to server/token.
  if (str(c.s, 'token') && existsSync(tls.serverCA)) writeToken(c.p, readCAs(tls).serverCA, secret!);
  const members = await etcd.members();
  if (members.length !== 1) log.fatal(`etcd cluster reset left ${members.length} members`);
  log.info(RESET_DONE);
  finished = true;
  await member.child.stop();
  process.exit(0);
}

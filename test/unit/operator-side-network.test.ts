// Behind a bastion the operator's machine has no route to the node LAN, so the engine may reach a node only
// inside an SSH connection. This pins down where the engine's code opens network connections at all: SSH in
// src/transport (which jumps through the bastion), and the TLS handshake, API requests and API tunnel in src/kube, all over
// a stream forwarded through such a connection; and the download module of `bootstrap artifacts`, which dials
// release sites, never a node. A new socket, HTTP client or fetch anywhere else fails here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.ts';

const NETWORK = /from '(node:)?(net|tls|http|https|http2|dgram)'|from '(ssh2|node-ssh|undici|@kubernetes\/client-node)'|\bfetch\(|\bWebSocket\b/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const opening = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => !/^\s*(\/\/|\*)/.test(l) && !/^import type /.test(l) && NETWORK.test(l));

describe("the engine's network access from the operator's machine", () => {
  it('is SSH (src/transport) and streams forwarded through it (src/kube), nothing else', () => {
    const found = ['cli', 'modes', 'src', 'phases', 'bin']
      .flatMap((d) => files(join(repoRoot, d)))
      .filter((f) => opening(f).length > 0)
      .map((f) => relative(repoRoot, f));
    expect(found.sort()).toEqual([
      // ssh2's key parser only (no connection): the deploy key's type and fingerprint
      'phases/flux/deploy-key.ts',
      // `bootstrap artifacts`: downloads from the release sites (or a mirror) onto the operator's machine;
      // it dials no cluster host, so a bastion changes nothing for it
      'src/artifacts/http.ts',
      // the engine's Kubernetes client, dialling a tunnel's local port
      'src/kube/client.ts',
      // the drain's API calls (CoreV1Api), made with that client through the same tunnel
      'src/kube/drain-client.ts',
      // HTTPS requests (verify's /readyz and reads, the gates' reads) over a stream forwarded by an SSH connection
      'src/kube/get-through.ts',
      // TLS over a stream forwarded by an SSH connection (remote.forward)
      'src/kube/handshake.ts',
      // a listener on 127.0.0.1 whose connections are forwarded by an SSH connection
      'src/kube/tunnel.ts',
      // ssh2's key parser
      'src/transport/identity.ts',
      // the SSH connections themselves (through the bastion when there is one)
      'src/transport/link.ts',
    ]);
    expect(readFileSync(join(repoRoot, 'src/kube/handshake.ts'), 'utf8')).toContain('socket: stream');
    // Its requests' only connection is the forwarded stream's TLS socket.
    // (its agent's connections are TLS over the stream the SSH connection forwards, kept for the run).
    expect(readFileSync(join(repoRoot, 'src/kube/get-through.ts'), 'utf8')).toMatch(
      /agent\.createConnection = [\s\S]*remote\.forward!\(address, port\)[\s\S]*socket: stream,[\s\S]*done\(null, socket\)[\s\S]*agent: pool\.agent/,
    );
    expect(readFileSync(join(repoRoot, 'src/kube/tunnel.ts'), 'utf8')).toContain("server.listen(0, '127.0.0.1'");
  });
});

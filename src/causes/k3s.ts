import { defineCauses } from './define.ts';

// k3s-founder and k3s-join: installing k3s and forming the etcd cluster (phases/k3s-*.ts).
export const k3sCauses = defineCauses({
  EXISTING_CLUSTER_FOUND: {
    title: 'A server already holds a k3s datastore, but the founder does not',
    meaning: 'Running cluster-init on the founder now would create a second, separate cluster (split brain).',
    remedy:
      'If the founder was reinstalled while the others kept the cluster, bring it back as a joiner with --replace <founder> (runbooks/replace-server.md); otherwise make the server that holds the datastore the founder in the inventory, restore with --restore, or (if that data is disposable) wipe it deliberately first.',
  },
  FOUNDER_API_NOT_READY: {
    title: "The founder's Kubernetes API did not become ready within its budget",
    meaning: 'k3s on the founder was started, but /readyz did not answer ok in time. The journal excerpt shows what k3s said.',
    remedy: 'Read the excerpt (journalctl -u k3s on the founder); fix what it names, then rerun with --resume.',
  },
  JOIN_FOUNDER_UNREACHABLE: {
    title: 'A joining server cannot reach the founder',
    meaning: 'k3s on the joiner logged "failed to get CA certs": the founder\'s :6443 refused or timed out.',
    remedy:
      'Check the founder is up (systemctl status k3s) and that the joiner can reach it on tcp/6443 (firewall, routing; on the joiner: timeout 3 bash -c "</dev/tcp/<founder>/6443" && echo open).',
  },
  TOKEN_CA_MISMATCH: {
    title: "The joiner's token pins a different cluster CA",
    meaning: 'k3s logged "token CA hash does not match": the token belongs to another cluster (or the founder was rebuilt).',
    remedy:
      "Rerun so that the engine writes this environment's token into the joiner's /etc/rancher/k3s/config.yaml (a token edited in by hand is replaced); if the founder was rebuilt by mistake, restore it (--restore), otherwise rebuild deliberately.",
  },
  TOKEN_REJECTED: {
    title: "The cluster refused the server's token",
    meaning:
      "The token's CA hash is right but its secret is not: the founder answered 401 to the joiner's bootstrap request (or to an agent's config request), or the datastore was encrypted with another token. The token in the state folder is not this cluster's.",
    remedy:
      'Use the token the cluster was built with (the state folder of the run that built it, or a backup); never generate a new one for an existing cluster.',
  },
  STATE_TOKEN_MISMATCH: {
    title: "The founder runs a cluster whose token is not this state folder's",
    meaning:
      "The founder already holds a datastore, and the state folder of this run has no cluster token or another one. Going on would write a new token into the founder's config and restart k3s, which then refuses to start (its bootstrap data is encrypted with the old token). Nothing was changed.",
    remedy:
      'Run from the state folder that built the cluster (BOOTSTRAP_STATE_DIR on the machine that built it), or put its cluster-token.json back from a backup (`bootstrap backup` keeps it); never run a fresh state folder against a running cluster.',
  },
  TOKEN_MALFORMED: {
    title: 'The cluster token is not in a form k3s accepts',
    meaning:
      'The token in the state folder (cluster-token.json) or a backup is neither K10<64 hex>::<user>:<password> nor a bare secret; k3s would refuse it ("invalid token CA hash length", "invalid token format"). Nothing was sent to any host.',
    remedy:
      'Restore cluster-token.json from the state folder of the run that built the cluster (or the backup); if only its "full" field is damaged, remove that field: the engine reads the full token back from the founder.',
  },
  K3S_DROPIN_OVERRIDES: {
    title: 'A drop-in on the host replaces what bootstrap writes for k3s',
    meaning:
      'k3s reads /etc/rancher/k3s/config.yaml and then every *.yaml in /etc/rancher/k3s/config.yaml.d, where a key without "+" replaces the value before it; systemd adds the *.conf drop-ins of its unit, where ExecStart= replaces the command (whose flags win over every config file) and K3S_CONFIG_FILE points k3s at another config file. A drop-in on the host (named, with what it sets) replaces what bootstrap writes, so k3s would run with that, not the inventory\'s, while bootstrap\'s files look converged. Refused before config.yaml is written, in check mode too.',
    remedy:
      'Take what is named out of the drop-in named in /etc/rancher/k3s/config.yaml.d or the unit\'s .d folder (or remove the file; after a unit drop-in, `sudo systemctl daemon-reload`) and set it through the inventory instead; where a list is meant to grow (tls-san, node-label), spell the key with "+" (`tls-san+:`), which appends. Then rerun.',
  },
  CRITICAL_CONFIG_MISMATCH: {
    title: "The joiner's critical configuration differs from the cluster's",
    meaning: 'k3s refuses to join when critical args (cluster-cidr, service-cidr, flannel-backend, …) differ between servers. The flag is named.',
    remedy:
      'Set the inventory field behind the flag named to what the cluster was built with (cluster-cidr: k3s.clusterCidr; service-cidr and cluster-dns: k3s.serviceCidr), or rebuild the cluster, then rerun.',
  },
  ETCD_PEER_UNREACHABLE: {
    title: "The joiner's etcd cannot reach its peers on tcp/2380",
    meaning: 'k3s logged "cannot fetch cluster info from peer urls" or a refused connection to :2380.',
    remedy: 'Open tcp/2379-2380 between the servers (firewall, nftables), then rerun.',
  },
  ETCD_CLUSTER_UNHEALTHY: {
    title: 'etcd refused to add the joiner: the cluster is not healthy enough',
    meaning:
      'etcd answered "unhealthy cluster" (a member is unreachable, so adding one would risk quorum) or "too many learner members" (another join is still a learner), or the server joined could not read etcd\'s member list ("failed to get etcd MemberList"), for a minute.',
    remedy:
      'Make every existing member healthy and reachable on tcp/2380 (sudo k3s kubectl get --raw /db/info lists the members; the EtcdIsVoter condition of each node says which is a voter), let a pending learner finish, then rerun with --resume.',
  },
  ETCD_QUORUM_LOST: {
    title: 'etcd has lost quorum: a majority of its members is down',
    meaning:
      "A server was joining when fewer than a majority of the etcd members (the servers holding etcd data) answered: the named servers' k3s is stopped or failed, or the host does not answer. etcd refuses every change then, the join included, and the API cannot read its data; waiting does not help.",
    remedy:
      'Bring the named servers back (systemctl start k3s; journalctl -u k3s says why it stopped): once a majority answers, the join goes on by itself; then rerun with --resume. If they are lost for good, restore from a backup (runbooks/dr-restore.md).',
  },
  DUPLICATE_NODE_NAME: {
    title: 'An etcd member with this node name already exists',
    meaning: 'A stale member of a server that was rebuilt still holds the name: k3s logged "duplicate node name found".',
    remedy:
      'Remove the stale member of that node name: `bootstrap <env> --replace <name>` deletes its Node so that k3s removes the member, then joins it again (runbooks/replace-server.md); by hand, `sudo k3s kubectl delete node <name>` (never forced) on a healthy server.',
  },
  NODE_PASSWORD_REJECTED: {
    title: 'The cluster rejected the node password of a rebuilt host',
    meaning: 'A host with this name registered before with another /etc/rancher/node/password.',
    remedy:
      'On a healthy server, delete the old registration of that node name: `sudo k3s kubectl delete node <name>`, or its node-password secret (`sudo k3s kubectl -n kube-system delete secret <name>.node-password.k3s`), then rerun; a server can be replaced instead (--replace <name>).',
  },
  LEARNER_NOT_PROMOTED: {
    title: 'The joiner stayed an etcd learner',
    meaning: 'The joiner became an etcd member but was not promoted to voter within the budget.',
    remedy:
      'Check etcd health on the founder (sudo k3s kubectl get --raw /db/info lists the members) and the joiner journal; a learner stalled for 5 minutes is evicted by k3s.',
  },
  AGENT_NOT_REGISTERED: {
    title: 'An agent did not register its Node within its budget',
    meaning:
      "k3s-agent was started with the VIP as its server, but no Node of its name appeared with a live heartbeat (its Lease in kube-node-lease renewed within 40 s), and its journal names no known failure. A Node left from the host's previous life does not count.",
    remedy:
      'Read the journal excerpt (journalctl -u k3s-agent on the agent); check the agent reaches the VIP on tcp/6443 (on the agent: timeout 3 bash -c "</dev/tcp/<vip>/6443" && echo open).',
  },
  JOIN_STALLED: {
    title: 'The joiner did not become an etcd voter: k3s never started, or nothing known explains the wait',
    meaning:
      "Either k3s's unit stayed in systemd's start-pre state for a minute (an ExecStartPre line that never returns, such as a modprobe stuck in a broken kernel module; k3s itself never ran, so its journal says nothing), or the joiner was not a voter at the end of its budget and nothing in its journal matched a known failure. The evidence says which: the unit's state and the ExecStartPre still running, or the journal excerpt.",
    remedy:
      'For start-pre: `systemctl status k3s` and `ps -ef --forest` on the host show the stuck command; fix or remove it (`systemctl cat k3s` lists the ExecStartPre lines and drop-ins), then rerun. Otherwise read the excerpt; if it shows a new failure mode, give it a named cause.',
  },
});

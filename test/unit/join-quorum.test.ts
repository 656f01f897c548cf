// The verdict the join's voter gate asks for when etcd refuses a joiner for its health: has the cluster
// lost quorum, and which servers are down?
import { describe, expect, it } from 'vitest';
import { quorumLost } from '../../phases/k3s/join-quorum.ts';

describe('a joined cluster without quorum', () => {
  it('is lost when 1 of 2 members answers, naming the one down', () => {
    const lost = quorumLost([
      { name: 'server-1', member: true },
      { name: 'server-2', member: true, down: 'k3s.service is inactive' },
    ]);
    expect(lost).toEqual({ members: ['server-1', 'server-2'], down: [{ name: 'server-2', member: true, down: 'k3s.service is inactive' }], needed: 2 });
  });

  it('holds while a majority answers: 2 of 3, or 3 of 5', () => {
    expect(
      quorumLost([
        { name: 'a', member: true },
        { name: 'b', member: true },
        { name: 'c', member: true, down: 'failed' },
      ]),
    ).toBeUndefined();
    const five = ['a', 'b', 'c', 'd', 'e'].map((name, i) => ({ name, member: true, down: i < 2 ? 'failed' : undefined }));
    expect(quorumLost(five)).toBeUndefined();
    five[2].down = 'failed';
    expect(quorumLost(five)?.down.map((d) => d.name)).toEqual(['a', 'b', 'c']);
  });

  it('counts only servers holding etcd data: servers not joined yet are no members', () => {
    // A cold build joining server-2: server-3 has no k3s yet (inactive, no data) and is not a member.
    expect(
      quorumLost([
        { name: 'server-1', member: true },
        { name: 'server-3', member: false, down: 'k3s.service is inactive' },
      ]),
    ).toBeUndefined();
    expect(quorumLost([{ name: 'server-3', member: false, down: 'k3s.service is inactive' }])).toBeUndefined();
  });
});

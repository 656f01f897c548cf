// The bench's CPU budget of a converged run (lab/bench-cpu.ts): the floor a run cannot beat on the lab's cores.
import { describe, expect, it } from 'vitest';
import { agentAllowanceMs, budgetLine, budgetOf, loginFloorMs, type CpuBudget } from '../../lab/bench-cpu.ts';

const budget: CpuBudget = {
  cores: 2,
  idleCores: 0.5,
  serversMs: 300,
  agentsMs: [200, 400, 300],
  engineMs: 600,
  loginMs: [50, 70, 60],
  sudoMs: [120, 140, 130],
};

describe('CPU budget of a converged run', () => {
  it('prints the idle cores, each share above idle and the floor: the run CPU over the cores the idle cluster leaves', () => {
    // (300 + 600 + 900) / (2 - 0.5) = 1200 ms
    expect(budgetLine(budget)).toBe(
      'idle cluster 0.50 of 2 cores; the run above idle: servers 300 ms; agents 300 ms each (median; a bare SSH login 60 ms, one running sudo -n true 130 ms), engine 600 ms; floor 1.20 s',
    );
  });

  it('puts a bare login in place of each agent for the login floor', () => {
    // (300 + 600 + 3 x 60) / 1.5 = 720 ms
    expect(loginFloorMs(budget)).toBeCloseTo(720);
  });

  it('puts a login that runs one sudo in place of each agent for the sudo floor', () => {
    // (300 + 600 + 3 x 130) / 1.5 = 860 ms
    expect(loginFloorMs(budget, true)).toBeCloseTo(860);
  });

  it('counts servers starved below their idle rate as costing nothing (the floor only drops)', () => {
    expect(loginFloorMs({ ...budget, serversMs: -400 })).toBeCloseTo((600 + 180) / 1.5);
  });

  it('says how much CPU a target leaves each agent with the idle cluster, the servers and the engine as measured', () => {
    // 1.2 s x 1.5 cores = 1800 ms; less servers 300 and engine 600: 900 ms over 3 agents
    expect(agentAllowanceMs(budget, 1_200)).toBeCloseTo(300);
    expect(agentAllowanceMs(budget, 500)).toBeLessThan(0);
  });

  it('splits the hosts into the servers together and each agent, and adds up the idle cores', () => {
    const b = budgetOf(
      new Map([
        ['s1', 0.2],
        ['s2', 0.1],
        ['a1', 0.01],
      ]),
      new Map([
        ['s1', 100],
        ['s2', 50],
        ['a1', 300],
      ]),
      ['a1'],
      700,
      { loginMs: [55], sudoMs: [125] },
    );
    expect(b).toMatchObject({ serversMs: 150, agentsMs: [300], engineMs: 700, loginMs: [55], sudoMs: [125] });
    expect(b.idleCores).toBeCloseTo(0.31);
    expect(b.cores).toBeGreaterThan(0);
  });
});

// Log line shapes of the programs the add-on twins imitate, so the engine's matchers see upstream's text:
// Go log/slog text (kube-vip >= 0.9, Cilium >= 1.18) and klog (client-go's leaderelection).
export function slogLine(level: 'INFO' | 'WARN' | 'ERROR', msg: string, attrs: Record<string, string | number | boolean> = {}, now = new Date()): string {
  const q = (v: string) => (/[\s"=]/.test(v) || v === '' ? JSON.stringify(v) : v);
  const kv = Object.entries(attrs)
    .map(([k, v]) => ` ${k}=${q(String(v))}`)
    .join('');
  return `time=${now.toISOString()} level=${level} msg=${q(msg)}${kv}`;
}

/** klog header: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg */
export function klogLine(level: 'I' | 'W' | 'E', file: string, msg: string, now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())} ${p(now.getUTCHours())}:${p(now.getUTCMinutes())}:${p(now.getUTCSeconds())}.${p(now.getUTCMilliseconds() * 1000, 6)}`;
  return `${level}${stamp}       1 ${file}] ${msg}`;
}

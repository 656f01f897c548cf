// k3s logs through logrus in its text format; journald shows the same shape for the twin, so an
// operator (or a pattern matcher) reading `journalctl -u k3s` sees lines like upstream's:
//   time="2026-01-01T00:00:00Z" level=info msg="Running kube-apiserver ..."
type Level = 'debug' | 'info' | 'warning' | 'error' | 'fatal';

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  /** Logs at level fatal and exits 1, as logrus.Fatal does. */
  fatal(msg: string): never;
}

function quote(msg: string): string {
  return JSON.stringify(msg);
}

function formatLine(level: Level, msg: string, now = new Date()): string {
  return `time="${now.toISOString().replace(/\.\d+Z$/, 'Z')}" level=${level} msg=${quote(msg)}`;
}

function makeLogger(write: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  return {
    info: (m) => write(formatLine('info', m)),
    warn: (m) => write(formatLine('warning', m)),
    error: (m) => write(formatLine('error', m)),
    fatal: (m) => {
      write(formatLine('fatal', m));
      process.exit(1);
    },
  };
}

export const log = makeLogger();

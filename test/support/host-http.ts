// An HTTP(S) request from inside a lab host, for tests: a lab host is a stock Debian 12 server without
// curl, so the request runs on the twins' private Node.js (lab/twin/tools.ts). Prints what `curl -w
// '%{http_code}'` would (the status, or 000 when nothing answered, the error code on stderr and exit 1),
// or with `body` the response body.
import { LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';

export interface HostHttpOptions {
  /** Skip certificate verification (curl -k). */
  insecure?: boolean;
  /** A CA file on the host to verify against (curl --cacert). */
  ca?: string;
  /** Dial this host:port instead, keeping the URL's name for TLS (curl --connect-to). */
  connectTo?: string;
  /** A Unix socket on the host (curl --unix-socket). */
  socketPath?: string;
  body?: boolean;
  timeoutMs?: number;
}

const SCRIPT = [
  'const o=JSON.parse(process.argv[1]);const u=new URL(o.url);const tls=require("tls");',
  'const m=u.protocol==="https:"?require("https"):require("http");const [ch,cp]=(o.connectTo||"").split(":");',
  'const opt={method:"GET",hostname:ch||u.hostname,port:cp||u.port,path:u.pathname+u.search,headers:{host:u.host},',
  'rejectUnauthorized:!o.insecure,timeout:o.timeoutMs||2000,checkServerIdentity:(_h,c)=>tls.checkServerIdentity(u.hostname,c)};',
  'if(!require("net").isIP(u.hostname))opt.servername=u.hostname;',
  'if(o.ca)opt.ca=require("fs").readFileSync(o.ca);if(o.socketPath){opt.socketPath=o.socketPath;delete opt.hostname;delete opt.port;}',
  'const rq=m.request(opt,(r)=>{let b="";r.on("data",(c)=>(b+=c));r.on("end",()=>process.stdout.write(o.body?b:String(r.statusCode)));});',
  'rq.on("timeout",()=>rq.destroy(Object.assign(new Error("timeout"),{code:"ETIMEDOUT"})));',
  'rq.on("error",(e)=>{if(!o.body)process.stdout.write("000");process.stderr.write(String(e.code||e.message));process.exitCode=1;});rq.end();',
].join('');

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The shell command (for hostExec or ssh) that requests `url` from the host. */
export function hostHttp(url: string, o: HostHttpOptions = {}): string {
  return `${LAB_TOOLS_DIR}/node -e ${q(SCRIPT)} ${q(JSON.stringify({ url, ...o }))}`;
}

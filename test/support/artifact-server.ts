// A release server on 127.0.0.1 for `bootstrap artifacts` tests: fixture bytes by path, with Range
// requests (206), and the ways a download goes wrong: a 404, a redirect, a body cut short once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Route =
  | { body: Buffer | string }
  /** Announces the whole length, sends `at` bytes, closes the connection; later requests are served whole. */
  | { body: Buffer | string; truncateOnceAt: number }
  | { redirect: string; status?: number }
  /** Sends headers and `at` bytes, then nothing more (a stalled server). */
  | { body: Buffer | string; stallAt: number };

export interface ArtifactServer {
  base: string;
  routes: Map<string, Route>;
  /** Every request: its path and Range header. */
  requests: { path: string; range?: string }[];
  close(): Promise<void>;
}

export async function artifactServer(): Promise<ArtifactServer> {
  const routes = new Map<string, Route>();
  const requests: { path: string; range?: string }[] = [];
  const truncated = new Set<string>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push({ path, ...(req.headers.range && { range: req.headers.range }) });
    const route = routes.get(path);
    if (!route) return void res.writeHead(404).end('not found');
    if ('redirect' in route) return void res.writeHead(route.status ?? 302, { location: route.redirect }).end();
    const body = Buffer.from(route.body);
    if ('truncateOnceAt' in route && !truncated.has(path)) {
      truncated.add(path);
      // Written raw, then FIN: the http response's own buffering could otherwise hold bytes back
      // (and a reset could let the client's kernel drop bytes it had received).
      const head = `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
      res.socket?.end(Buffer.concat([Buffer.from(head), body.subarray(0, route.truncateOnceAt)]));
      return;
    }
    if ('stallAt' in route) {
      res.writeHead(200, { 'content-length': body.length });
      return void res.write(body.subarray(0, route.stallAt));
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      if (start >= body.length) return void res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
      return void res.end(body.subarray(start));
    }
    res.writeHead(200, { 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    routes,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// The run report's stylesheet, inline so the report is one file that opens anywhere, offline. One colour per
// outcome; a stop is the only red on the page.
export const REPORT_CSS = `
:root { --ok: #2e7d32; --changed: #1565c0; --would: #ef6c00; --skipped: #9e9e9e; --gate: #6a1b9a;
  --action: #00838f; --stop: #d32f2f; --line: #e0e0e0; --muted: #616161; }
* { box-sizing: border-box; }
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #212121; margin: 24px; background: #fff; }
h1 { font-size: 20px; margin: 0 0 2px; }
h2 { font-size: 15px; margin: 24px 0 8px; }
.sub { color: var(--muted); margin: 0 0 16px; }
code, pre { font: 12px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; }
.summary { border: 1px solid var(--line); border-left: 6px solid var(--ok); border-radius: 4px; padding: 12px 16px; }
.summary.stopped { border-left-color: var(--stop); }
.summary.would-change { border-left-color: var(--would); }
.outcome { font-size: 16px; font-weight: 600; margin: 0 0 8px; }
.stopped .outcome { color: var(--stop); }
.counts { display: flex; gap: 28px; margin: 0 0 10px; }
.counts div { display: flex; flex-direction: column; }
.counts dt { color: var(--muted); font-size: 11px; text-transform: uppercase; letter-spacing: .04em; }
.counts dd { margin: 0; font-size: 18px; font-weight: 600; }
table.phases { border-collapse: collapse; margin: 4px 0 8px; }
table.phases td, table.phases th { padding: 2px 14px 2px 0; text-align: left; }
table.phases th { color: var(--muted); font-weight: normal; }
td.stopped { color: var(--stop); font-weight: 600; }
td.not-run { color: var(--skipped); }
.warnings, .waivers { margin: 4px 0; padding-left: 18px; }
.stop { border: 1px solid var(--stop); border-left: 6px solid var(--stop); background: #fdecea; border-radius: 4px;
  padding: 8px 12px; margin: 6px 0; }
.stop .cause { font-weight: 700; color: var(--stop); }
.stop dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 6px 0 0; }
.stop dt { color: var(--muted); }
.stop dd { margin: 0; overflow-wrap: anywhere; }
.stop pre { margin: 0; white-space: pre-wrap; background: #fff6f5; padding: 4px 6px; border-radius: 3px; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 0 0 8px; color: var(--muted); }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 10px; margin-right: 5px;
  vertical-align: -1px; border-radius: 2px; background: var(--c); }
.timeline { min-width: 760px; }
.row { display: grid; grid-template-columns: 340px 1fr; align-items: center; }
.row .label { padding: 1px 10px 1px 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.track { position: relative; height: 18px; border-left: 1px solid var(--line); border-right: 1px solid var(--line); }
.axis .track { height: 20px; border-bottom: 1px solid #bdbdbd; }
.tick { position: absolute; top: 0; bottom: 0; border-left: 1px solid #bdbdbd; padding-left: 3px; font-size: 11px; color: var(--muted); }
.phase { margin-top: 10px; border-top: 1px solid var(--line); padding-top: 4px; }
.phase .label { font-weight: 700; }
.phase .track { height: 20px; }
.phase.not-run .label { color: var(--skipped); font-weight: normal; }
.host .label { padding-left: 12px; font-weight: 600; }
.item .label { padding-left: 28px; color: #424242; }
.item.action .label { padding-left: 44px; }
.meta { color: var(--muted); font-weight: normal; }
.item .track { height: 16px; }
.bar { position: absolute; top: 3px; bottom: 3px; min-width: 2px; border-radius: 2px; background: var(--c, var(--ok)); }
.span { position: absolute; top: 6px; bottom: 6px; border-radius: 2px; background: #c8e6c9; }
.span.stopped { background: #f5b7b1; }
.span.phase-span { background: #cfd8dc; }
.budget { position: absolute; top: 1px; bottom: 1px; border: 1px dashed var(--gate); border-radius: 2px;
  background: rgba(106, 27, 154, .06); }
.budget.beyond { border-right: none; border-radius: 2px 0 0 2px; }
.mark { position: absolute; top: 3px; width: 10px; height: 10px; margin-left: -5px; transform: rotate(45deg); background: var(--c, var(--ok)); }
.stopmark { position: absolute; top: -2px; bottom: -2px; width: 3px; margin-left: -1px; background: var(--stop); }
.ok { --c: var(--ok); } .changed { --c: var(--changed); } .would-change { --c: var(--would); }
.skipped { --c: var(--skipped); } .gate { --c: var(--gate); } .action { --c: var(--action); }
.would-wait { --c: #ce93d8; }
.failed { --c: var(--stop); }
.unfinished { --c: repeating-linear-gradient(45deg, #bdbdbd 0 4px, #eeeeee 4px 8px); }
.item.failed .label { color: var(--stop); font-weight: 600; }
.notes { grid-column: 2; margin: 0 0 2px; padding: 0 0 0 4px; list-style: none; color: var(--muted); font-size: 12px; }
.row > .stop { grid-column: 1 / -1; margin-left: 28px; }
footer { margin-top: 24px; color: var(--muted); }
`;

// ---------------------------------------------------------------------------------------------
// Where we run
// ---------------------------------------------------------------------------------------------
const params = new URLSearchParams(location.search);
const SERVED = location.protocol === 'http:' || location.protocol === 'https:';
const EMBED = params.get('embed') === '1';
const RUN_ID = params.get('run');
/** `?design=<name>&version=<n>`: that recorded version of the design, shown read-only. */
const VERSION = RUN_ID ? null : Number(params.get('version')) || null;
const READ_ONLY = !!RUN_ID || !!VERSION;
/** The API, relative to this page (so a proxy prefix in front of the server keeps working). */
const API = SERVED ? new URL('api/plugins/visual-workflow', location.href).href : null;
const SVG_NS = 'http://www.w3.org/2000/svg';

const NODE_W = 180, NODE_H = 64, NOTE_W = 180;


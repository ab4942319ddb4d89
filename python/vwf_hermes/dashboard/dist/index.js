(function () {
  "use strict";
  // visual-workflow dashboard tab for Hermes.
  //
  // Shows the dashboard of a running `vwf serve` (its runs, and the canvas it links to) in an
  // iframe. Everything inside the frame is served and decided by `vwf serve`; this file only
  // finds the URL, checks that something answers there, and embeds it.
  //
  // URL: `plugins.entries.visual-workflow.dashboard_url` in Hermes's config.yaml, else
  // http://127.0.0.1:8765/ (the default bind of `vwf serve`).
  //
  // `vwf serve` lets only the origins of its `[server] frame_ancestors` frame its pages, and its
  // API needs its token: the browser logs in once through the link `vwf serve` prints, whose
  // SameSite=Strict cookie the frame then carries (this dashboard and vwf serve are one site when
  // both use the same host name). The tab says both, with this page's own origin to list.
  //
  // Loaded by the Hermes dashboard as <script src="/dashboard-plugins/visual-workflow/dist/index.js">
  // (see dashboard/manifest.json); plain JavaScript against window.__HERMES_PLUGIN_SDK__, no build.

  var PLUGIN = "visual-workflow";
  var DEFAULT_URL = "http://127.0.0.1:8765/";
  var PROBE_TIMEOUT_MS = 4000;

  var SDK = window.__HERMES_PLUGIN_SDK__;
  var PLUGINS = window.__HERMES_PLUGINS__;
  if (!SDK || !PLUGINS || typeof PLUGINS.register !== "function") return;

  var React = SDK.React;
  var h = React.createElement;
  var useState = SDK.hooks.useState;
  var useEffect = SDK.hooks.useEffect;
  var useCallback = SDK.hooks.useCallback;

  // The configured URL, or the default. Only http(s) URLs are embedded.
  function configuredUrl(config) {
    var plugins = config && config.plugins;
    var entries = plugins && typeof plugins === "object" ? plugins.entries : null;
    var entry = entries && typeof entries === "object" ? entries[PLUGIN] : null;
    var raw = entry && typeof entry === "object" ? entry.dashboard_url : null;
    if (typeof raw !== "string" || !raw.trim()) return { url: DEFAULT_URL, note: null };
    try {
      var parsed = new URL(raw.trim());
      if (parsed.protocol === "http:" || parsed.protocol === "https:") return { url: parsed.href, note: null };
    } catch (e) {
      /* fall through */
    }
    return { url: DEFAULT_URL, note: "dashboard_url " + JSON.stringify(raw) + " is not an http(s) URL; using " + DEFAULT_URL };
  }

  function loadConfig() {
    if (SDK.api && typeof SDK.api.getConfig === "function") return SDK.api.getConfig();
    if (typeof SDK.fetchJSON === "function") return SDK.fetchJSON("/api/config");
    return Promise.resolve({});
  }

  // Resolves true when something answers at `url` (any HTTP status), false when nothing does.
  // `no-cors`: the answer stays opaque, which is all a reachability check needs.
  function probe(url) {
    var controller = typeof AbortController === "function" ? new AbortController() : null;
    var timer = setTimeout(function () {
      if (controller) controller.abort();
    }, PROBE_TIMEOUT_MS);
    var options = { mode: "no-cors", cache: "no-store", credentials: "omit", redirect: "follow" };
    if (controller) options.signal = controller.signal;
    return fetch(url, options).then(
      function () {
        clearTimeout(timer);
        return true;
      },
      function () {
        clearTimeout(timer);
        return false;
      }
    );
  }

  var box = { padding: "1rem", maxWidth: "44rem", lineHeight: 1.5 };
  var code = { fontFamily: "monospace", padding: "0 0.25em" };
  var linkStyle = { textDecoration: "underline" };

  function Unreachable(props) {
    var mixed = window.location.protocol === "https:" && /^http:/i.test(props.url);
    return h(
      "div",
      { role: "alert", style: box, "data-vwf-state": "unreachable" },
      h("p", { style: { fontWeight: 600, marginBottom: "0.5rem" } }, "vwf serve is not reachable at " + props.url),
      h(
        "p",
        null,
        "Start it with ",
        h("code", { style: code }, "vwf serve"),
        " (it binds 127.0.0.1:8765 by default), or set ",
        h("code", { style: code }, "plugins.entries." + PLUGIN + ".dashboard_url"),
        " in Hermes's config.yaml to where it listens."
      ),
      mixed
        ? h("p", null, "This dashboard is served over https, so the browser blocks an http frame: serve vwf over https too.")
        : null,
      props.note ? h("p", null, props.note) : null,
      h(
        "p",
        { style: { marginTop: "0.75rem" } },
        h("button", { type: "button", onClick: props.onRetry, style: { textDecoration: "underline", cursor: "pointer" } }, "Try again")
      )
    );
  }

  function WorkflowsPage() {
    var _s = useState({ phase: "loading", url: DEFAULT_URL, note: null, attempt: 0 });
    var state = _s[0];
    var setState = _s[1];

    var retry = useCallback(function () {
      setState(function (s) {
        return { phase: "loading", url: s.url, note: s.note, attempt: s.attempt + 1 };
      });
    }, []);

    useEffect(
      function () {
        var live = true;
        loadConfig()
          .then(configuredUrl, function () {
            return { url: DEFAULT_URL, note: null };
          })
          .then(function (found) {
            return probe(found.url).then(function (up) {
              if (!live) return;
              setState({ phase: up ? "up" : "down", url: found.url, note: found.note, attempt: state.attempt });
            });
          });
        return function () {
          live = false;
        };
      },
      [state.attempt]
    );

    if (state.phase === "loading") {
      return h("div", { style: box, "data-vwf-state": "loading" }, "Looking for vwf serve…");
    }
    if (state.phase === "down") {
      return h(Unreachable, { url: state.url, note: state.note, onRetry: retry });
    }
    return h(
      "div",
      { style: { display: "flex", flexDirection: "column", gap: "0.5rem", height: "100%" }, "data-vwf-state": "up" },
      h(
        "div",
        { style: { display: "flex", gap: "1rem", fontSize: "0.85em", opacity: 0.8 } },
        h("span", null, "vwf serve at " + state.url),
        h("a", { href: state.url, target: "_blank", rel: "noopener noreferrer", style: linkStyle }, "Open in a new tab"),
        h("button", { type: "button", onClick: retry, style: { textDecoration: "underline", cursor: "pointer" } }, "Reload")
      ),
      state.note ? h("div", { style: { fontSize: "0.85em" } }, state.note) : null,
      h(
        "div",
        { style: { fontSize: "0.85em", opacity: 0.8 }, "data-vwf-hint": "framing" },
        "Frame empty? Add ",
        h("code", { style: code }, "frame_ancestors = [" + JSON.stringify(window.location.origin) + "]"),
        " under [server] in vwf's visual-workflow.toml and restart vwf serve. Asked for a token? Open the login link vwf serve printed, in this browser, then Reload."
      ),
      h("iframe", {
        key: state.attempt,
        src: state.url,
        title: "visual-workflow: canvas and runs",
        style: { width: "100%", height: "calc(100vh - 11rem)", minHeight: "32rem", border: "0", borderRadius: "0.5rem", background: "#fff" },
      })
    );
  }

  PLUGINS.register(PLUGIN, WorkflowsPage);
})();

// The health page (console.views): fetch its panel again every few seconds and swap it in place,
// without reloading the page. A panel is only taken from an answer that says it is one (a session
// that expired answers the login page instead): otherwise the last panel stays, and the line above
// it says when and why the refresh failed. No inline script: a CSP of 'self' leaves this working.
(function () {
    "use strict";

    function start() {
        const root = document.getElementById("memory-health");
        const panel = document.getElementById("memory-health-panel");
        const line = document.getElementById("memory-health-refresh");
        if (!root || !panel || !line) {
            return;
        }
        const url = root.dataset.panelUrl;
        const seconds = Math.max(2, parseInt(root.dataset.refreshSeconds, 10) || 10);
        let busy = false;

        function time() {
            return new Date().toISOString().slice(11, 19);
        }

        function failed(why) {
            line.textContent = "Refresh failed at " + time() + " UTC (" + why + "); the panel below is the last one fetched. Trying again in " + seconds + " s.";
            line.classList.add("memory-health__refresh--failed");
        }

        async function refresh() {
            if (busy || document.hidden) {
                return;
            }
            busy = true;
            try {
                const answer = await fetch(url, {credentials: "same-origin", cache: "no-store", headers: {"Accept": "text/html"}});
                if (!answer.ok || answer.headers.get("X-Health-Panel") !== "1") {
                    failed(answer.ok ? "signed out? reload the page" : "HTTP " + answer.status);
                    return;
                }
                panel.innerHTML = await answer.text();
                root.dataset.refreshes = String((parseInt(root.dataset.refreshes, 10) || 0) + 1);
                line.textContent = "Refreshed at " + time() + " UTC; this panel refreshes itself every " + seconds + " s.";
                line.classList.remove("memory-health__refresh--failed");
            } catch (error) {
                failed("the web process does not answer");
            } finally {
                busy = false;
            }
        }

        window.setInterval(refresh, seconds * 1000);
        document.addEventListener("visibilitychange", function () {
            if (!document.hidden) {
                refresh();
            }
        });
    }

    if (document.readyState === "loading") {
        document.addEventListener("DOMContentLoaded", start);
    } else {
        start();
    }
})();

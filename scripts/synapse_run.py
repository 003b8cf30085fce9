"""Runs Synapse with a config file the tests wrote (scripts/synapse run): makes the
signing key the config names when it is missing, and with --exit-with-parent exits when
the process that started it dies, so a crashed test run never leaves a homeserver behind;
with --remove-dir-with-parent it then also removes the directory holding the config (a
test's throwaway server, whose database nobody else will read)."""

import argparse
import os
import runpy
import shutil
import sys
import threading
import time

import yaml


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--exit-with-parent", action="store_true")
    ap.add_argument("--remove-dir-with-parent", action="store_true")
    args = ap.parse_args()
    parent = os.getppid()

    if args.exit_with_parent or args.remove_dir_with_parent:

        def watch() -> None:
            # When the parent dies this process is re-parented, so the parent pid changes.
            while os.getppid() == parent:
                time.sleep(0.5)
            if args.remove_dir_with_parent:
                shutil.rmtree(os.path.dirname(os.path.abspath(args.config)), ignore_errors=True)
            os._exit(0)

        threading.Thread(target=watch, daemon=True).start()

    with open(args.config) as f:
        key_path = yaml.safe_load(f)["signing_key_path"]
    if not os.path.exists(key_path):
        from signedjson.key import generate_signing_key, write_signing_keys

        with open(key_path, "w") as f:
            write_signing_keys(f, [generate_signing_key("a_test")])

    sys.argv = ["synapse.app.homeserver", "-c", args.config]
    runpy.run_module("synapse.app.homeserver", run_name="__main__")


if __name__ == "__main__":
    main()

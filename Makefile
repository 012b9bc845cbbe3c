# The two commands of README.md. Each installs what it needs first.
.PHONY: demo test setup

setup:
	bash scripts/setup.sh

demo: setup
	cargo build --release -q -p attest-shell --bin attest
	python3 scripts/demo-snp.py target/release/attest

test: setup
	bash scripts/test.sh

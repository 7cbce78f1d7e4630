"""`kernelbot target`: the run of one function through extract -> evolve -> integrate -> verify -> propose.

run_dir.py   RUN/ itself: the name of every file in it, and every read and write of them
records.py   the typed outcome of each stage, as target.toml keeps it
state.py     RUN/target.toml (what the run is about, each stage's status and outcome)
runner.py    the stages in order, skipping finished ones, recording each outcome before the next
stages.py    the six stages; search.py (evolve) and proposal.py (propose) hold the larger two
repo.py      the repository the change is made against (the example, a checkout, a clone, a release)
specs/       input specs shipped for profiles' functions (the example's)
view.py      the live view (rich on a terminal, plain lines elsewhere)
launch.py    one run started or continued, as a library (`kernelbot target` and `kernelbot scan` call it)
"""

#!/usr/bin/env bash
# The batch split over MPI processes (src/mpi), against one-process runs of
# the same binary. Usage: check_mpi.sh CASE AUTOBATCH MPIEXEC WORKDIR
#   programs-2, programs-3  every example program under mpirun -np 2 / -np 3
#                           (static split), and --stats totals of fib, gcd and
#                           mandelbrot with --threads 1 equal to a one-process
#                           run with --threads 2 / 3 (the same shares)
#   programs-dynamic        every example program, -np 3, dynamic split, chunks of 2
#   error                   a failing thread in rank 1: reported once, global thread, exit 1
#   stop                    a thread failing at once in the last rank stops the others'
#                           endless loops: exit 1 in seconds, the error once, no output;
#                           --time-limit stops a rank's endless loop, naming the thread
#   record                  --on-error record with failing threads in several ranks: stdout,
#                           stderr, exit status and errors.json byte for byte as one process
#   npy                     .npy inputs read in parts (by offset), stdin program, file
#                           outputs, --batch without inputs, empty and tiny batches
#   dying                   a process killed mid-run: the run fails with mpirun's message,
#                           no hang, no output file
#   sample                  `autobatch sample` of eight schools, -np 2 (static and dynamic):
#                           the summary and every --output file as one process; a data error
#                           and a model's runtime error reported once, with their exit status
# Prints one line per failure; exit 1 on any.
set -uo pipefail
case_name=$1 ab=$2 mpiexec=$3 work=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
cd "$root"
mpi=("$mpiexec" --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# mpirun with a bound, so a hang fails instead of blocking the suite.
mpirun_np() {
  local np=$1
  shift
  timeout 120 "${mpi[@]}" -np "$np" "$ab" "$@"
}
entry_of() { sed -n 's/^# entry: *//p' "$1" | head -1; }
strip_seconds() { sed 's/, "seconds": {[^}]*}//'; }

programs() {  # $1: np, then extra flags
  local np=$1
  shift
  local n=0
  for p in programs/*.ab; do
    local base=${p%.ab} entry
    entry=$(entry_of "$p")
    [ -f "$base.json" ] || continue
    local args=(run "$p" --inputs "$base.json" ${entry:+--entry "$entry"})
    local one many
    one=$("$ab" "${args[@]}" 2>&1)
    local rc_one=$?
    many=$(mpirun_np "$np" "${args[@]}" "$@" 2>&1)
    local rc_many=$?
    if [ "$rc_one" != "$rc_many" ] || [ "$one" != "$many" ]; then
      fail "$p -np $np $*: exit $rc_many (one process: $rc_one), outputs differ:"
      diff <(echo "$one") <(echo "$many") | head -5
    fi
    n=$((n + 1))
  done
  [ "$n" -gt 20 ] || fail "only $n programs found"
}

stats() {  # $1: np
  local np=$1
  for spec in "fib.ab fib.json fib" "gcd.ab gcd.json gcd" "mandelbrot.ab mandelbrot.json mandelbrot"; do
    set -- $spec
    local one many
    one=$("$ab" run "programs/$1" --inputs "programs/$2" --entry "$3" --stats --threads "$np" |
      strip_seconds)
    many=$(mpirun_np "$np" run "programs/$1" --inputs "programs/$2" --entry "$3" --stats \
      --threads 1 | strip_seconds)
    [ "$one" = "$many" ] || fail "--stats of $1 under -np $np differ from --threads $np:
  $one
  $many"
  done
}

case $case_name in
  programs-2)
    programs 2
    stats 2
    ;;
  programs-3)
    programs 3
    stats 3
    ;;
  programs-dynamic)
    programs 3 --mpi-split dynamic --mpi-chunk 2
    # The dynamic split's --stats: same lane operations as one process.
    one=$("$ab" run programs/fib.ab --entry fib --inputs programs/fib.json --stats)
    many=$(mpirun_np 3 run programs/fib.ab --entry fib --inputs programs/fib.json --stats \
      --mpi-split dynamic --mpi-chunk 1)
    lanes() { grep -o '"lane_operations": [0-9]*'; }
    [ "$(echo "$one" | lanes)" = "$(echo "$many" | lanes)" ] ||
      fail "dynamic --stats lane_operations differ: $one / $many"
    ;;
  error)
    in='{"a": [4, 6, 8, 9, 10, 12], "b": [2, 3, 1, 0, 0, 4]}'
    want='tests/mpi/divide.ab:4:10: runtime error: integer division by zero in thread 3 of 6 (function divide, block entry)'
    "$ab" run tests/mpi/divide.ab --inputs "$in" 2>"$work/one.err" >/dev/null
    [ $? = 1 ] || fail "one process: expected exit 1"
    grep -qxF "$want" "$work/one.err" || fail "one process: $(cat "$work/one.err")"
    # -np 3: thread 3 fails in rank 1 (threads 2-3) and thread 4 in rank 2 (threads 4-5);
    # -np 2: 3 and 4 fail in rank 1 (threads 3-5), where 3 always comes first.
    for np_flags in "3" "2" "3 --mpi-split dynamic --mpi-chunk 1" "2 --mpi-split dynamic --mpi-chunk 2"; do
      set -- $np_flags
      np=$1
      shift
      mpirun_np "$np" run tests/mpi/divide.ab --inputs "$in" --output "$work/err.json" "$@" \
        >"$work/out" 2>"$work/err"
      rc=$?
      [ "$rc" = 1 ] || fail "-np $np_flags: exit $rc, expected 1"
      [ "$(grep -c 'runtime error' "$work/err")" = 1 ] ||
        fail "-np $np_flags: the error is not reported exactly once: $(cat "$work/err")"
      # Where threads 3 and 4 run on two processes (-np 3, and the dynamic split's chunks),
      # either may fail first and stop the other before it divides: the error reported is the
      # first in batch order among those that failed before the stop, so thread 4's is as
      # correct as thread 3's. Under -np 2 both are rank 1's, which reaches 3 first.
      also="$want"
      case "$np_flags" in 3*|*dynamic*) also="${want/thread 3 of/thread 4 of}" ;; esac
      grep -qxF -e "$want" -e "$also" "$work/err" ||
        fail "-np $np_flags: expected '$want' in: $(cat "$work/err")"
      [ ! -s "$work/out" ] && [ ! -e "$work/err.json" ] || fail "-np $np_flags: outputs written"
    done
    ;;
  stop)
    # Every thread but the last loops for hours (2^62 iterations); the last
    # divides by zero at once. The others must be stopped (RunOptions::cancel),
    # not run to the end: a bound far below the loops' time, above mpirun's
    # start-up on a loaded machine.
    printf '%s\n' '# entry: work' 'func work(n: i64, d: i64) -> i64 {' '  s = 0' '  k = 0' \
      '  while k < n {' '    s = s + k % 7' '    k = k + 1' '  }' '  return s / d' '}' \
      >"$work/work.ab"
    long=4611686018427387904
    for np_flags in "2" "3" "2 --mpi-split dynamic --mpi-chunk 1" "3 --mpi-split dynamic --mpi-chunk 1"; do
      set -- $np_flags
      np=$1
      shift
      ns="" ds=""
      for ((i = 0; i < np - 1; i++)); do ns+="$long, " ds+="1, "; done
      in="{\"n\": [${ns}0], \"d\": [${ds}0]}"
      want="$work/work.ab:9:10: runtime error: integer division by zero in thread $((np - 1)) of $np (function work, block "
      rm -f "$work/stop.json"
      start=$(date +%s)
      timeout 60 "${mpi[@]}" -np "$np" "$ab" run "$work/work.ab" --inputs "$in" \
        --output "$work/stop.json" "$@" >"$work/out" 2>"$work/err"
      rc=$?
      took=$(($(date +%s) - start))
      [ "$rc" = 1 ] || fail "stop -np $np_flags: exit $rc after $took s, expected 1: $(cat "$work/err")"
      [ "$took" -le 30 ] || fail "stop -np $np_flags: took $took s"
      [ "$(grep -c 'runtime error' "$work/err")" = 1 ] && grep -qF "$want" "$work/err" ||
        fail "stop -np $np_flags: expected '$want' once in: $(cat "$work/err")"
      ! grep -q interrupted "$work/err" || fail "stop -np $np_flags: $(cat "$work/err")"
      [ ! -s "$work/out" ] && [ ! -e "$work/stop.json" ] || fail "stop -np $np_flags: outputs written"
    done
    # --time-limit: the process whose share does not end reports it once,
    # naming its running thread by its number in the whole batch.
    rm -f "$work/stop.json"
    timeout 60 "${mpi[@]}" -np 2 "$ab" run "$work/work.ab" --inputs "{\"n\": [5, $long], \"d\": 1}" \
      --output "$work/stop.json" --time-limit 2 >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 1 ] || fail "time-limit: exit $rc, expected 1: $(cat "$work/err")"
    [ "$(grep -c 'time-limit 2 s reached' "$work/err")" = 1 ] &&
      grep -qF "still running: thread 1 in function work, block " "$work/err" ||
      fail "time-limit: expected the limit and thread 1 once in: $(cat "$work/err")"
    [ ! -s "$work/out" ] && [ ! -e "$work/stop.json" ] || fail "time-limit: outputs written"
    ;;
  record)
    # Failing threads in every rank under -np 2 and 3 (threads 1, 4, 6), and
    # 12 of 13 (past the ten errors shown on stderr; stdout and stderr only).
    few='{"a": [4, 6, 8, 9, 10, 12, 5, 7], "b": [2, 0, 1, 3, 0, 4, 0, 1]}'
    many='{"a": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "b": [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]}'
    for in in "$few" "$many"; do
      args=(run tests/mpi/divide.ab --inputs "$in" --on-error record)
      rm -rf "$work/one" && mkdir -p "$work/one"
      "$ab" "${args[@]}" >"$work/one/stdout" 2>"$work/one/stderr"
      rc_one=$?
      "$ab" "${args[@]}" --output "$work/one/dir/" >"$work/one/dir.stdout" 2>/dev/null
      "$ab" "${args[@]}" --output "$work/one/out.json" >"$work/one/json.stdout" 2>/dev/null
      [ "$rc_one" = 1 ] && [ -s "$work/one/dir/errors.json" ] || fail "record: one process: exit $rc_one"
      configs=("2" "3" "2 --mpi-split dynamic --mpi-chunk 1" "3 --mpi-split dynamic --mpi-chunk 3")
      [ "$in" = "$few" ] || configs=("3" "2 --mpi-split dynamic --mpi-chunk 2")
      for np_flags in "${configs[@]}"; do
        set -- $np_flags
        np=$1
        shift
        rm -rf "$work/np" && mkdir -p "$work/np"
        # (without the notice mpirun adds after a non-zero exit)
        mpirun_np "$np" "${args[@]}" "$@" >"$work/np/stdout" 2>"$work/np/stderr.all"
        rc=$?
        sed '/^-\{20,\}$/,$d' "$work/np/stderr.all" >"$work/np/stderr"
        [ "$rc" = "$rc_one" ] || fail "record -np $np_flags: exit $rc, one process: $rc_one"
        for f in stdout stderr; do
          cmp -s "$work/one/$f" "$work/np/$f" ||
            fail "record -np $np_flags: $f differs: $(diff "$work/one/$f" "$work/np/$f" | head -5)"
        done
        [ "$in" = "$few" ] || continue
        mpirun_np "$np" "${args[@]}" "$@" --output "$work/np/dir/" >"$work/np/dir.stdout" 2>/dev/null
        mpirun_np "$np" "${args[@]}" "$@" --output "$work/np/out.json" >"$work/np/json.stdout" \
          2>/dev/null
        for f in dir/out0.npy dir/errors.json out.json errors.json dir.stdout json.stdout; do
          cmp -s "$work/one/$f" "$work/np/$f" || fail "record -np $np_flags: $f differs"
        done
      done
    done
    ;;
  npy)
    # n: 10 threads of i64 from a run's .npy output; x: f64 of them halved,
    # integral in rows 0-7 and 4.5 in row 9 (rank 2's rows under -np 3).
    printf '%s\n' 'func twice(n: i64) -> i64 {' '  return n * 2' '}' >"$work/twice.ab"
    "$ab" run "$work/twice.ab" --inputs '{"n": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}' \
      --output "$work/n.npy" || fail "making n.npy"
    # f names its results: every process's run must keep the names (JSON and files).
    printf '%s\n' 'func f(n: i64, x: i64, k: i64) -> (y: i64, third: f64) {' \
      '  return n * k + x, cast(x, dtype=f64) / 3.0' '}' >"$work/f.ab"
    "$ab" run - --inputs "n=$work/n.npy" --inputs '{"k": 3}' --output "$work/xs.npy" \
      < <(printf '%s\n' 'func g(n: i64, k: i64) -> f64 {' '  return cast(n + k, dtype=f64)' '}') ||
      fail "making xs.npy"
    one=$("$ab" run "$work/f.ab" --inputs "n=$work/n.npy" --inputs "x=$work/xs.npy" \
      --inputs '{"k": 2}')
    [[ $one == *'"names": ["y", "third"]}' ]] || fail "npy: one process: $one"
    for np in 2 3; do
      for split in static dynamic; do
        many=$(mpirun_np "$np" run - --inputs "n=$work/n.npy" --inputs "x=$work/xs.npy" \
          --inputs '{"k": 2}' --mpi-split $split --mpi-chunk 3 <"$work/f.ab")
        [ "$one" = "$many" ] || fail "npy -np $np $split: $many, one process: $one"
        rm -rf "$work/dir"
        mpirun_np "$np" run "$work/f.ab" --inputs "n=$work/n.npy" --inputs "x=$work/xs.npy" \
          --inputs '{"k": 2}' --mpi-split $split --output "$work/dir/" || fail "--output dir/"
        "$ab" run "$work/f.ab" --inputs "n=$work/n.npy" --inputs "x=$work/xs.npy" \
          --inputs '{"k": 2}' --output "$work/dir1/"
        cmp -s "$work/dir/y.npy" "$work/dir1/y.npy" &&
          cmp -s "$work/dir/third.npy" "$work/dir1/third.npy" || fail "npy outputs -np $np $split"
      done
    done
    # Edge cases: no inputs (--batch), an empty batch, fewer threads than processes.
    printf '%s\n' 'func main() -> f64 {' '  return 2.5' '}' >"$work/const.ab"
    for args in "$work/const.ab --batch 5" "$work/const.ab --batch 2" \
      "programs/spin.ab --inputs {\"n\":[]}" "programs/spin.ab --inputs {\"n\":[3,4]}"; do
      one=$("$ab" run $args)
      for split in static dynamic; do
        many=$(mpirun_np 3 run $args --mpi-split $split)
        [ "$one" = "$many" ] || fail "run $args -np 3 $split: $many, one process: $one"
      done
    done
    # A value that does not convert in row 9: only the part holding it reads
    # it, and the message names the rows read (rank 2's share, 7..10).
    "$ab" run - --inputs "n=$work/n.npy" --output "$work/half.npy" \
      < <(printf '%s\n' 'func h(n: i64) -> f64 {' '  if n == 20 {' '    return 4.5' '  }' \
        '  return cast(n, dtype=f64)' '}')
    mpirun_np 3 run "$work/f.ab" --inputs "n=$work/n.npy" --inputs "x=$work/half.npy" \
      --inputs '{"k": 2}' >/dev/null 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] || fail "a bad .npy row: exit $rc, expected 2"
    grep -q "half.npy: parameter 'x' (i64), in rows 7..10 .*element \[2\]: 4.5 is not an integer" "$work/err" ||
      fail "a bad .npy row: $(cat "$work/err")"
    ;;
  dying)
    # Each process spins for minutes; rank 1 is killed after a second.
    rm -f "$work/dead.json"
    "${mpi[@]}" -np 2 "$ab" run programs/straggler.ab \
      --inputs '{"n": [4000000000, 4000000000], "seed": [1, 2]}' --output "$work/dead.json" \
      >"$work/out" 2>"$work/err" &
    launcher=$!
    killed=""
    sleep 1  # let the processes reach their run phase
    for _ in $(seq 50); do
      sleep 0.2
      for c in $(pgrep -P "$launcher"); do
        if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
          kill -9 "$c" && killed=$c
        fi
      done
      [ -n "$killed" ] && break
    done
    [ -n "$killed" ] || fail "rank 1 not found among the children of mpirun ($launcher)"
    for _ in $(seq 300); do
      kill -0 "$launcher" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$launcher" 2>/dev/null; then
      fail "mpirun still running 30 s after rank 1 died"
      kill "$launcher"
    fi
    wait "$launcher"
    rc=$?
    [ "$rc" != 0 ] || fail "exit 0 after a process died: $(cat "$work/err")"
    # mpirun's notice; or, if rank 0 was in an MPI call (rank 1 killed
    # before the run phase, on a loaded machine), Open MPI's report of the
    # lost peer from rank 0.
    grep -Eq "rank 1.*exited on signal 9|peer process has unexpectedly disconnected" "$work/err" ||
      fail "no clear message (exit $rc): $(cat "$work/err")"
    [ ! -e "$work/dead.json" ] || fail "an output file was written (exit $rc): $(cat "$work/err")"
    ;;
  sample)
    model=programs/models/eight_schools.ab
    data=programs/models/eight_schools.data.json
    args=(sample "$model" --data "$data" --chains 3 --warmup 150 --samples 100 --seed 7)
    drop_seconds() { sed 's/draws each, [0-9.]* s$/draws each/'; }
    rm -rf "$work/one"  # (the work folder outlives a run)
    "$ab" "${args[@]}" --output "$work/one/" 2>"$work/one.err" | drop_seconds >"$work/one.txt"
    for flags in "" "--mpi-split dynamic --mpi-chunk 1"; do
      rm -rf "$work/many"
      mpirun_np 2 "${args[@]}" --output "$work/many/" $flags 2>"$work/many.err" |
        drop_seconds >"$work/many.txt"
      cmp -s "$work/one.txt" "$work/many.txt" ||
        fail "sample -np 2 $flags: the summary differs: $(diff "$work/one.txt" "$work/many.txt")"
      cmp -s "$work/one.err" "$work/many.err" || fail "sample -np 2 $flags: stderr differs"
      n=0
      # The draws and statistics (10), and the adaptation's results in adaptation/ (2).
      for f in "$work"/one/*.npy "$work"/one/adaptation/*.npy; do
        rel=${f#"$work"/one/}
        cmp -s "$f" "$work/many/$rel" || fail "sample -np 2 $flags: $rel differs"
        n=$((n + 1))
      done
      [ "$n" = 12 ] || fail "sample: $n .npy files, expected 12"
    done
    mpirun_np 2 sample "$model" --data "$work/none.json" >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] || fail "sample without its data: exit $rc, expected 2"
    [ "$(grep -c "cannot read data" "$work/err")" = 1 ] ||
      fail "sample without its data: not reported once: $(cat "$work/err")"
    printf '%s\n' 'func log_density(theta: f64[2], xs) -> f64 {' \
      '  i = cast(floor(theta[0] * 10.0), dtype=i64)' \
      '  return -0.5 * sum(theta * theta) + xs[i]' '}' >"$work/bad.ab"
    echo '{"xs": [1.0, 2.0, 3.0]}' >"$work/bad.json"
    mpirun_np 2 sample "$work/bad.ab" --data "$work/bad.json" --seed 3 >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 1 ] || fail "sample with a runtime error: exit $rc, expected 1"
    [ "$(grep -c "bad.ab:3:.*runtime error: index" "$work/err")" = 1 ] ||
      fail "sample with a runtime error: not reported once: $(cat "$work/err")"
    [ ! -s "$work/out" ] || fail "sample with a runtime error printed a summary"
    ;;
  *)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
[ "$failures" = 0 ] && echo "ok: $case_name" || echo "$failures failure(s): $case_name"
[ "$failures" = 0 ]

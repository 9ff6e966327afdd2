# The validation loop closed on the host (issue: a loop that closes on every machine): plumb-validate
# bench --backend host measures the scenario's op shapes, plumb calibrate fits the host-cpu-core
# profile to them, and for each schedule plumb-validate run --backend host executes the scenario's
# per-rank schedule with real arithmetic (threads, or with MPI=1 one MPI process per rank), and
# plumb compare predicts the same shrunk job with the calibrated profile. Each rank must have run its
# ops in the simulated order, and in one of five calibrations and measurements:
#  - the step plumb predicts at the run's own op times (compare's error_at_measured_ops: the schedule,
#    its waits and its communication) within ±15% of the measured step, and
#  - the step predicted with the calibrated profile within ±15% as well, unless the run's ops ran more
#    than 10% away from the prices the bench calibrated (op_time_ratio): the machine's speed moved
#    between the bench and the run, and this measurement cannot judge the calibration.
# With -DDP=2 (MPI only) it runs 1F1B as two replicas of the pipeline, 8 processes, each rank
# all-reducing its gradients with its peer (a real MPI_Allreduce, its sum checked by the run), and
# checks the step and that compare reports the all-reduce.
#   -DVALIDATE=plumb-validate -DPLUMB=plumb -DOUT=dir -DSCENARIO=file [-DMPIEXEC=... -DMPI=1 [-DDP=2]]
set(schedules gpipe 1f1b interleaved zb-h1 dualpipev)
set(processes 4)
set(replicas "")
if(DP)
  set(schedules 1f1b)
  math(EXPR processes "4 * ${DP}")
  set(replicas --dp ${DP})
  set(MPI "${MPI}-dp${DP}")
endif()
set(bench ${OUT}/host-bench.json)
set(profile ${OUT}/host-calibrated.json)
function(run_or_fail)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "exit ${code}: ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
# Calibrating is timing too: the bench and a run minutes apart see different machines (session 23: a
# bench priced 1F1B at 0.94 s, then five runs measured 1.11-1.34 s), so a miss calibrates again first.
function(calibrate)
  run_or_fail(${VALIDATE} bench --backend host --scenario ${SCENARIO} --out ${bench})
  run_or_fail(${PLUMB} calibrate ${bench} -o ${profile})
endfunction()
if(NOT EXISTS ${profile})
  calibrate()
endif()
set(summary "")
foreach(schedule IN LISTS schedules)
  set(vp 1)
  if(schedule STREQUAL "interleaved")
    set(vp 2)
  endif()
  set(run ${OUT}/host-run-${schedule}${MPI}.json)
  set(command ${VALIDATE} run ${SCENARIO} --backend host --set parallel.schedule=${schedule} --set parallel.vp=${vp} --steps 1 --out ${run})
  # A 2-core VM's op times drift by 20-35% for seconds at a time (session 23: gpipe steps of 0.97 to 1.46 s
  # in back-to-back runs, whole passes of one rank slower together; 0.93 to 1.82 s for MPI 1F1B beside a
  # fuzzer; CI, session 23: MPI 1F1B predicted 0.91-1.16 s and measured 0.94-1.22 s, the two in
  # opposite states five times running), so a miss is calibrated and measured again, at most four
  # times, and a calibrated miss the run's own op times explain is not held against the model; a
  # schedule model that is wrong misses all five.
  foreach(attempt 1 2 3 4 5)
    if(attempt GREATER 1)
      calibrate()
    endif()
    if(MPI)
      run_or_fail(${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${processes} ${MPIEXEC_PREFLAGS} ${command} --mpi ${replicas})
    else()
      run_or_fail(${command})
    endif()
    run_or_fail(${PLUMB} compare ${run} --profile ${profile} --json)
    string(JSON error GET "${last_output}" error)
    string(JSON same GET "${last_output}" same_op_order)
    string(JSON measured GET "${last_output}" measured_step_s)
    string(JSON predicted GET "${last_output}" predicted_step_s)
    string(JSON ratio GET "${last_output}" op_time_ratio)
    string(JSON schedule_error GET "${last_output}" error_at_measured_ops)
    string(APPEND summary "${schedule} (measurement ${attempt}): measured ${measured} s, predicted ${predicted} s, error ${error}; "
                          "ops at ${ratio} of their calibrated prices, error at their measured times ${schedule_error}; same op order ${same}\n")
    if(NOT same)
      string(JSON where GET "${last_output}" op_order_difference)
      message(FATAL_ERROR "${schedule}: the executed op order departs from the simulated one: ${where}")
    endif()
    if(DP)
      string(JSON kinds GET "${last_output}" kinds)
      if(NOT kinds MATCHES "gradient all-reduce")
        message(FATAL_ERROR "${schedule} with ${DP} replicas: plumb compare reports no gradient all-reduce\n${kinds}")
      endif()
    endif()
    set(schedule_ok FALSE)
    if(schedule_error LESS_EQUAL 0.15 AND schedule_error GREATER_EQUAL -0.15)
      set(schedule_ok TRUE)
    endif()
    set(calibration_ok FALSE)
    if((error LESS_EQUAL 0.15 AND error GREATER_EQUAL -0.15) OR ratio GREATER 1.10 OR ratio LESS 0.90)
      set(calibration_ok TRUE)
    endif()
    if(schedule_ok AND calibration_ok)
      break()
    endif()
    if(attempt EQUAL 5)
      message(FATAL_ERROR "${schedule}: in five measurements, none within ±15% both at the run's own op times and with the "
                          "calibrated profile (unless its ops ran >10% from the calibrated prices); the last: predicted ${predicted} s "
                          "against ${measured} s measured (error ${error}), ops at ${ratio} of their prices, error at their "
                          "measured times ${schedule_error}\n${summary}")
    endif()
  endforeach()
endforeach()
message(STATUS "host loop${MPI}:\n${summary}")

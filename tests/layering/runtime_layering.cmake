# The runtime does not link the compiler (DESIGN.md: "the runtime never links the compiler"):
#   1. ac_runtime's whole link closure, as CMake resolved it at configure time (LINK_CLOSURE, a file
#      with one entry a line), names no compiler library (NVRTC and the code generator, the tuner, the
#      compile pipeline, the artifact writer, the advisor and libcurl, compile on first use);
#   2. libagentcompile_runtime.so (RUNTIME_SO, when built) needs neither libnvrtc nor libcurl and has
#      no undefined nvrtc* or curl_* symbol;
#   3. no file under src/runtime includes a header of tune/, pipeline/, codegen/, advisor/ or first_use/.
# Run by ctest as runtime_does_not_link_the_compiler:
#   cmake -DLINK_CLOSURE=... -DRUNTIME_SO=... -DSOURCE_DIR=... -DREADELF=... -DNM=... -P runtime_layering.cmake
set(failures "")

file(STRINGS "${LINK_CLOSURE}" closure)
foreach(entry IN LISTS closure)
  if(entry MATCHES "^(ac_codegen|ac_tune|ac_pipeline|ac_emit|ac_advisor|ac_first_use)$" OR entry MATCHES "nvrtc|curl")
    list(APPEND failures "ac_runtime links ${entry}")
  endif()
endforeach()

if(RUNTIME_SO)
  if(NOT EXISTS "${RUNTIME_SO}")
    list(APPEND failures "${RUNTIME_SO} is not built (ninja agentcompile_runtime)")
  else()
    execute_process(COMMAND "${READELF}" -d "${RUNTIME_SO}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      list(APPEND failures "readelf -d ${RUNTIME_SO} failed")
    endif()
    string(REGEX MATCHALL "NEEDED[^\n]*\\[[^]\n]*(nvrtc|curl)[^]\n]*\\]" needed "${dynamic}")
    foreach(line IN LISTS needed)
      list(APPEND failures "${RUNTIME_SO}: ${line}")
    endforeach()
    execute_process(COMMAND "${NM}" -D --undefined-only "${RUNTIME_SO}" OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      list(APPEND failures "nm -D ${RUNTIME_SO} failed")
    endif()
    string(REGEX MATCHALL "[^\n ]*(nvrtc|curl_)[^\n ]*" symbols "${undefined}")
    foreach(symbol IN LISTS symbols)
      list(APPEND failures "${RUNTIME_SO} needs ${symbol}")
    endforeach()
  endif()
endif()

file(GLOB runtime_files "${SOURCE_DIR}/src/runtime/*")
foreach(path IN LISTS runtime_files)
  file(STRINGS "${path}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"(tune|pipeline|codegen|advisor|first_use)/")
  foreach(line IN LISTS includes)
    get_filename_component(name "${path}" NAME)
    list(APPEND failures "src/runtime/${name}: ${line}")
  endforeach()
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "the runtime reaches into the compiler:\n  ${text}")
endif()
message(STATUS "ac_runtime links no compiler library; libagentcompile_runtime.so needs no NVRTC or libcurl; src/runtime includes no compiler header")

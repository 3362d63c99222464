# ds_add_run_library(NAME SOURCES src... [LINK lib...] [PRIVATE_LINK lib...]
#                    [DEFINITIONS def...] [OPTIONS opt...])
#
# The run side of ds (state store, checkpoints, data, calling compiled code)
# is built twice from the same sources, ccache making the second compile a
# cache hit:
#   NAME        for the tools that link the compiler: LLVM is the shared
#               libLLVM that libMLIR itself uses (one copy of its globals);
#   NAMERunner  for ds-runner, which runs a ds-compile artifact and must not
#               load libLLVM or libMLIR: LLVM becomes LLVM Support and
#               TargetParser linked statically, and every DS* library in
#               LINK its own Runner variant.
# The archives by path: the imported LLVMSupport target would also bring
# z3, zlib and zstd, which nothing on the run side calls.
add_library(DSStaticLLVMSupport INTERFACE)
target_link_libraries(DSStaticLLVMSupport INTERFACE
  ${LLVM_LIBRARY_DIR}/libLLVMTargetParser.a
  ${LLVM_LIBRARY_DIR}/libLLVMSupport.a
  ${LLVM_LIBRARY_DIR}/libLLVMDemangle.a
  rt dl m pthread)

function(ds_add_run_library name)
  cmake_parse_arguments(ARG "" ""
    "SOURCES;LINK;PRIVATE_LINK;DEFINITIONS;OPTIONS" ${ARGN})
  set(runnerLink)
  foreach(lib IN LISTS ARG_LINK)
    if(lib STREQUAL "LLVM")
      list(APPEND runnerLink DSStaticLLVMSupport)
    elseif(lib MATCHES "^DS")
      list(APPEND runnerLink ${lib}Runner)
    else()
      list(APPEND runnerLink ${lib})
    endif()
  endforeach()
  add_library(${name} STATIC ${ARG_SOURCES})
  add_library(${name}Runner STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC ${ARG_LINK} PRIVATE ${ARG_PRIVATE_LINK})
  target_link_libraries(${name}Runner PUBLIC ${runnerLink}
    PRIVATE ${ARG_PRIVATE_LINK})
  foreach(target ${name} ${name}Runner)
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINITIONS})
    target_compile_options(${target} PRIVATE ${ARG_OPTIONS})
  endforeach()
endfunction()

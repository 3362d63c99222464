# Docs generated from ODS land in build/docs/generated; `make docs` copies them
# to docs/generated, and a lit test checks the copy is current.
add_custom_target(ds-docs)
set(DS_DOCS_DIR ${PROJECT_BINARY_DIR}/docs/generated)

function(_ds_doc td out)
  set(LLVM_TARGET_DEFINITIONS ${td}.td)
  tablegen(MLIR ${out}.md ${ARGN})
  add_custom_command(OUTPUT ${DS_DOCS_DIR}/${out}.md
    COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_CURRENT_BINARY_DIR}/${out}.md
            ${DS_DOCS_DIR}/${out}.md
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${out}.md)
  add_custom_target(${out}-doc ALL DEPENDS ${DS_DOCS_DIR}/${out}.md)
  add_dependencies(ds-docs ${out}-doc)
endfunction()

# Dialect doc: attributes, types and ops of one dialect.
function(ds_add_dialect_doc td dialect)
  _ds_doc(${td} ${dialect} -gen-dialect-doc -dialect=${dialect})
endfunction()

function(ds_add_interface_doc td out)
  _ds_doc(${td} ${out} -gen-op-interface-docs)
endfunction()

function(ds_add_pass_doc td out)
  _ds_doc(${td} ${out} -gen-pass-doc)
endfunction()

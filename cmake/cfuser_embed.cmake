# Embeds text files (device runtime snippets, host-backend runtime) into a C source as
# string constants, looked up by file name through cg_embedded_file(). The generator is
# a CMake script run at build time, so editing a snippet rebuilds only this file.
function(cfuser_embed out files)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/cfuser_embed_run.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/cfuser_embed_run.cmake
    COMMENT "Embedding runtime snippets"
    VERBATIM) # keeps the ';' of the FILES list away from the shell
endfunction()

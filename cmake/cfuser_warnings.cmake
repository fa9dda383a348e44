# The warning set of DESIGN.md section 11, -Werror on request, sanitizers on request.
function(cfuser_apply_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes)
  if(CFUSER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(CFUSER_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# The libFuzzer build (cmake/cfuser_fuzz.cmake): coverage for the fuzzer, ASan + UBSan.
if(CFUSER_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Run at every build (cmake -P): the commit the sources are at, "-dirty" when tracked files
# differ from it, into a one-line C file that is rewritten only when the stamp changes, so a
# commit or an edit restamps the logs without rebuilding anything else.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    set(commit "${commit}-dirty")
  endif()
endif()
set(CSM_GIT_COMMIT ${commit})
configure_file(${SOURCE_DIR}/core/stamp.c.in ${OUT} @ONLY)

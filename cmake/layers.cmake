# plumb's layers: each folder of code is one library that may use only the layers it links, and those
# layers' own dependencies — never a layer above it. The build enforces it: every layer's sources and
# headers are scanned for project includes before the layer compiles (cmake/check_layering.cmake), and an
# include of a folder the layer may not use, or an include circle between the layer's own files, stops
# the build with the file, the line and what the layer may use. docs/architecture.md draws the layers.
#
#   plumb_layer(<target> [LINKS <lower layers>...] [USES <header-only folders>...] [EXTERNAL <libraries>...]
#               [EXECUTABLE] SOURCES <files>... [HEADERS <files>...])
#
# LINKS: the plumb layers below this one it builds on (linked PUBLIC, their folders allowed);
# USES: project folders whose headers alone it may read (kernels/'s call descriptions);
# EXTERNAL: third-party libraries, linked PUBLIC;
# HEADERS: the folder's headers, listed like its sources (the check refuses an include of one left out).
set(PLUMB_LAYERING_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/check_layering.cmake)

function(plumb_layer target)
  cmake_parse_arguments(L "EXECUTABLE" "" "LINKS;USES;EXTERNAL;SOURCES;HEADERS" ${ARGN})
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(allowed ${folder} ${L_USES})
  foreach(lower IN LISTS L_LINKS)
    get_property(lower_allowed GLOBAL PROPERTY PLUMB_LAYER_ALLOWED_${lower})
    if(NOT lower_allowed)
      message(FATAL_ERROR "plumb_layer(${target}): ${lower} is not a layer defined before it")
    endif()
    list(APPEND allowed ${lower_allowed})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY PLUMB_LAYER_ALLOWED_${target} ${allowed})

  if(L_EXECUTABLE)
    add_executable(${target} ${L_SOURCES} ${L_HEADERS})
    target_link_libraries(${target} PRIVATE ${L_LINKS} ${L_EXTERNAL} plumb_warnings)
  else()
    add_library(${target} ${L_SOURCES} ${L_HEADERS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${L_LINKS} ${L_EXTERNAL} PRIVATE plumb_warnings)
  endif()

  # The layer's own files: what it compiles and the headers it lists.
  set(files "")
  foreach(file IN LISTS L_SOURCES L_HEADERS)
    get_filename_component(path ${file} ABSOLUTE)
    list(APPEND files ${path})
  endforeach()
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.layering)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER=${target} "-DFOLDER=${folder}" "-DALLOWED=${allowed}" "-DFILES=${files}"
            -DROOT=${PROJECT_SOURCE_DIR} -DSTAMP=${stamp} -P ${PLUMB_LAYERING_SCRIPT}
    DEPENDS ${files} ${PLUMB_LAYERING_SCRIPT}
    COMMENT "Checking ${folder}/ includes only the layers below it"
    VERBATIM)
  add_custom_target(${target}_layering DEPENDS ${stamp})
  add_dependencies(${target} ${target}_layering)
endfunction()

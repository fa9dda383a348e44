/* cfuser/status.h: status codes and the export macro shared by every public header.
 *
 * Every public function that can fail returns a cf_status. The message of the failure is
 * kept by the object the call was made on (cf_fusion_error, cf_executor_error), in the
 * manner of sqlite3_errmsg; each getter's header says how long its pointer stays valid. */
#ifndef CFUSER_STATUS_H
#define CFUSER_STATUS_H

#if defined(__GNUC__)
#define CF_API __attribute__((visibility("default")))
#else
#define CF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_status {
  CF_OK = 0,
  CF_ERR_INVALID_ARGUMENT, /* a bad value passed to a call: NULL, out of range, mismatch */
  CF_ERR_INVALID_SCHEDULE, /* a schedule that cannot be lowered or violates a rule */
  CF_ERR_UNSUPPORTED,      /* valid, but not implemented by cfuser */
  CF_ERR_COMPILE,          /* NVRTC or the host C compiler rejected the generated code */
  CF_ERR_CUDA,             /* a CUDA driver call failed */
  CF_ERR_NO_DEVICE,        /* the operation needs a CUDA device and there is none */
  CF_ERR_OUT_OF_MEMORY,    /* host or device allocation failed */
  CF_ERR_RUNTIME,          /* a kernel stopped on a run-time check (host backend) */
  CF_ERR_INTERNAL,         /* a bug in cfuser: please report it */
  CF_ERR_IO                /* a file or directory cfuser needs (the kernel cache) is unusable */
} cf_status;

/* The enumerator's name without the CF_ prefix, e.g. "ERR_INVALID_SCHEDULE". */
CF_API const char *cf_status_name(cf_status s);

#ifdef __cplusplus
}
#endif
#endif

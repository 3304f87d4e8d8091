/* Shared test helpers: cmocka has no floating-point equality assert. */
#ifndef CSM_TEST_CHECK_H
#define CSM_TEST_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#define assert_close(a, b, tol)                                                                   \
    do {                                                                                          \
        double a_ = (a), b_ = (b), t_ = (tol);                                                    \
        if (!(fabs(a_ - b_) <= t_))                                                               \
            fail_msg("%s = %.17g, %s = %.17g, differ by %.3g > %.3g", #a, a_, #b, b_,             \
                     fabs(a_ - b_), t_);                                                          \
    } while (0)

#endif

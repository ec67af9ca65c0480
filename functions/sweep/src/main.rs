//! The `sweep` Lambda function (`SweepFunction` in template.yaml): every minute, the runs whose
//! execution died are revived or their turn ended.

knowledge_aws::sweep_main!();
